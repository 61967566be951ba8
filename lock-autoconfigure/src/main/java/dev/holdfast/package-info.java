/**
 * Holdfast's user-facing API: {@link dev.holdfast.DistributedLock},
 * {@link dev.holdfast.SingleInstanceScheduled}, {@link dev.holdfast.LockTemplate} (and
 * {@link dev.holdfast.AsyncLockTemplate}), {@link dev.holdfast.Lease}, {@link dev.holdfast.LockContext},
 * {@link dev.holdfast.ScheduledTick}, {@link dev.holdfast.LockListener} for metrics and tracing,
 * {@link dev.holdfast.HeldLeases} for operators, and the exceptions. Everything an application
 * imports lives here, besides the constructors of the backends and the JDBC fencing guard in
 * their own packages.
 */
@NullMarked
package dev.holdfast;

import org.jspecify.annotations.NullMarked;
