/**
 * The ZooKeeper backend: ephemeral sequential nodes through Apache Curator, with the lock node's
 * {@code czxid} as fencing token and expiry judged by the ensemble's clock.
 */
@NullMarked
package dev.holdfast.zookeeper;

import org.jspecify.annotations.NullMarked;
