/**
 * The locking engine above the backends: key encoding, reentrancy, waiting, renewal.
 */
@NullMarked
package dev.holdfast.core;

import org.jspecify.annotations.NullMarked;
