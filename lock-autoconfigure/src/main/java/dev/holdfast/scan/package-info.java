/**
 * Which classes can have methods carrying one of Holdfast's method annotations, judged once per
 * class so that the post-processors and the advisor pass over every other bean cheaply.
 */
@NullMarked
package dev.holdfast.scan;

import org.jspecify.annotations.NullMarked;
