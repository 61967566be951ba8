/**
 * The {@link dev.holdfast.DistributedLock} advisor: operation lookup, SpEL keys, the interceptor.
 */
@NullMarked
package dev.holdfast.aop;

import org.jspecify.annotations.NullMarked;
