/**
 * Semaphores whose permits are leases: a semaphore of N permits is N single-key locks of the
 * engine, its permit slots; taking a permit takes a free slot.
 */
@NullMarked
package dev.holdfast.semaphore;

import org.jspecify.annotations.NullMarked;
