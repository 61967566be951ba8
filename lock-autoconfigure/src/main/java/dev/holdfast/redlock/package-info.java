/**
 * The Redlock backend: one lock across several independent Redis masters, reached through one
 * Redisson client per node. See {@link dev.holdfast.redlock.RedlockLockBackend}.
 */
@NullMarked
package dev.holdfast.redlock;

import org.jspecify.annotations.NullMarked;
