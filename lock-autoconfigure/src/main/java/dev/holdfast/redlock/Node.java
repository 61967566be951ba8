package dev.holdfast.redlock;

import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;

/**
 * One Redlock node: an independent Redis master, its client and its script handle.
 *
 * @param name the node's address without credentials, or {@code node-<index>}
 * @param client the client connected to this node only
 * @param script the node's scripts, with string codec
 */
record Node(String name, RedissonClient client, RScript script) {
}
