package dev.holdfast.redlock;

import org.redisson.api.RedissonClient;

/**
 * One Redlock node: an independent Redis master, its Redisson client (pings, checks, release
 * events) and the pipelined connection that carries the algorithm's scripts.
 *
 * @param name the node's address without credentials, or {@code node-<index>}
 * @param client the client connected to this node only
 * @param connection the scripts' connection to this node
 */
record Node(String name, RedissonClient client, NodeConnection connection) {
}
