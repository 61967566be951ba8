/**
 * The in-memory backend: locks local to one JVM.
 */
@NullMarked
package dev.holdfast.memory;

import org.jspecify.annotations.NullMarked;
