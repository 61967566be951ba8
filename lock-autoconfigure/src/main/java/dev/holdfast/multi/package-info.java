/**
 * Locks of several keys at once, composed of the engine's single-key leases: taken in one
 * canonical order, all or none within one wait time, released in reverse order.
 */
@NullMarked
package dev.holdfast.multi;

import org.jspecify.annotations.NullMarked;
