/**
 * Spring Integration support: Holdfast's leadership events also published as Spring
 * Integration's leader events, so that Holdfast replaces {@code LockRegistryLeaderInitiator}.
 */
@NullMarked
package dev.holdfast.integration;

import org.jspecify.annotations.NullMarked;
