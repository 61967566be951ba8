/**
 * Holdfast's user-facing API: {@link dev.holdfast.DistributedLock}, {@link dev.holdfast.LockTemplate},
 * {@link dev.holdfast.Lease} and the exceptions.
 */
@NullMarked
package dev.holdfast;

import org.jspecify.annotations.NullMarked;
