/**
 * The backend SPI: {@link dev.holdfast.spi.LockBackend} is the essential operation; optional
 * abilities ({@link dev.holdfast.spi.LeaseRenewal}, {@link dev.holdfast.spi.ReleaseEvents}) are
 * interfaces of their own that a backend implements when it can.
 */
@NullMarked
package dev.holdfast.spi;

import org.jspecify.annotations.NullMarked;
