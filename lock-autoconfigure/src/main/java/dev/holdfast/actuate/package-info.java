/**
 * Operations support for Holdfast: Micrometer meters and observations (spans), the
 * {@code locks} and {@code leaders} Actuator endpoints and the backend health indicator.
 */
@NullMarked
package dev.holdfast.actuate;

import org.jspecify.annotations.NullMarked;
