/**
 * Real servers that a test starts on free loopback ports and stops again, without Docker: one
 * launcher class per server ({@link dev.holdfast.test.server.RedisServer},
 * {@link dev.holdfast.test.server.PostgresServer}, {@link dev.holdfast.test.server.MariaDbServer},
 * {@link dev.holdfast.test.server.ZooKeeperServer}), and the replicated Redis topologies built from
 * {@code RedisServer} processes ({@link dev.holdfast.test.server.RedisCluster},
 * {@link dev.holdfast.test.server.RedisSentinels}).
 * A launcher for another server belongs here, beside these, with the same shape: a static
 * {@code start()} that returns a running server, the address a client needs, and
 * {@link java.lang.AutoCloseable#close()} that stops it and deletes its files; its port comes
 * from {@code FreePorts}. {@link dev.holdfast.test.server.BlackholeProxy} stands between a client
 * and any of them and loses the server's answers: a request whose outcome the client never learns.
 * <p>
 * Nothing here depends on Holdfast: any test can start these servers. The binaries and drivers of
 * each server are optional dependencies of this module, named in each launcher's documentation.
 */
package dev.holdfast.test.server;
