/**
 * Leader election on the lock engine: a group's leader holds the engine lease of its group key,
 * renewed in the template's batched renewal; a term is one such lease.
 */
@NullMarked
package dev.holdfast.leader;

import org.jspecify.annotations.NullMarked;
