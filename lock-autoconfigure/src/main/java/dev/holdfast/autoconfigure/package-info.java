/**
 * Auto-configuration of Holdfast: backend selection, properties and infrastructure beans.
 */
@NullMarked
package dev.holdfast.autoconfigure;

import org.jspecify.annotations.NullMarked;
