/**
 * Helpers that need nothing of the engine's internals: shared by the layers above the engine
 * (annotations, scheduling, several keys, semaphores), and the listener guard the engine uses.
 */
@NullMarked
package dev.holdfast.support;

import org.jspecify.annotations.NullMarked;
