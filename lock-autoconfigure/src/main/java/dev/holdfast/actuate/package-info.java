/**
 * Operations support for Holdfast: Micrometer meters, the {@code locks} Actuator endpoint and
 * the backend health indicator.
 */
@NullMarked
package dev.holdfast.actuate;

import org.jspecify.annotations.NullMarked;
