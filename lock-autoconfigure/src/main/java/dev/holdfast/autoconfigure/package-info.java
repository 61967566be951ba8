/**
 * Auto-configuration of Holdfast: backend selection, the lock template and the advisors.
 */
@NullMarked
package dev.holdfast.autoconfigure;

import org.jspecify.annotations.NullMarked;
