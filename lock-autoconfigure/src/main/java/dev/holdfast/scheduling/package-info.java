/**
 * {@link dev.holdfast.SingleInstanceScheduled} jobs: registration on Spring's scheduling
 * infrastructure and the per-tick locking that makes each run happen on one instance.
 */
@NullMarked
package dev.holdfast.scheduling;

import org.jspecify.annotations.NullMarked;
