/**
 * Helpers shared by the layers above the engine (annotations, scheduling, several keys,
 * semaphores) that need nothing of the engine's internals.
 */
@NullMarked
package dev.holdfast.support;

import org.jspecify.annotations.NullMarked;
