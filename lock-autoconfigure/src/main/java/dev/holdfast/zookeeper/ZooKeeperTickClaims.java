package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * Tick claims on ZooKeeper: one persistent node per job at {@code <base-path>/ticks/<key>},
 * whose data is the last claimed tick and the claim's time to live, and whose {@code mtime} is
 * when the ensemble recorded the claim.
 * <ul>
 * <li>A claim reads the node and writes it back with the version it read ({@code setData} with
 * an expected version, or a create when there is none): of racing claims, one write wins, the
 * others read again.</li>
 * <li>Which tick is due is judged by the ensemble's clock: the claimer first writes to a clock
 * node ({@code <base-path>/clock}) and reads the time the ensemble stamped on that write; a tick
 * further from it than the tolerance is not due, and nothing is written to the record. This
 * judgement is one write before the claim's own (ZooKeeper cannot condition a write on its
 * clock), as the portable SQL reads the database clock one statement before.</li>
 * <li>A later tick is claimed without looking at the record's age. The same or an earlier tick
 * is claimed only once the record has expired, judged by the same ensemble time against the
 * record's {@code mtime} plus its time to live.</li>
 * <li>A failed claim writes nothing to the record, so it never extends it.</li>
 * </ul>
 */
final class ZooKeeperTickClaims {

	/** Racing writers each move the record forward; a claimer rereads at most this often. */
	private static final int MAX_ATTEMPTS = 32;

	private static final byte[] EMPTY = new byte[0];

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final String ticksPath;

	private final String clockPath;

	ZooKeeperTickClaims(ZooKeeperLockBackend backend) {
		this.backend = backend;
		this.client = backend.client();
		this.ticksPath = backend.path("ticks");
		this.clockPath = backend.path("clock");
	}

	TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		try {
			this.backend.awaitConnected("claim a tick of", key);
			long now = ensembleTime();
			Instant time = Instant.ofEpochMilli(now);
			if (Math.abs(now - tick.toEpochMilli()) > tolerance.toMillis()) {
				return new TickClaim(TickClaim.Outcome.NOT_DUE, time);
			}
			String path = this.ticksPath + "/" + ZooKeeperPaths.encode(key);
			byte[] claim = encode(tick.toEpochMilli(), Math.max(1, ttl.toMillis()));
			for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
				Stat stat = new Stat();
				byte[] data;
				try {
					data = this.client.getData().storingStatIn(stat).forPath(path);
				}
				catch (KeeperException.NoNodeException ex) {
					try {
						this.client.create().creatingParentContainersIfNeeded().forPath(path, claim);
						return new TickClaim(TickClaim.Outcome.CLAIMED, time);
					}
					catch (KeeperException.NodeExistsException raced) {
						continue;
					}
				}
				Record current = decode(data);
				if (current != null && current.tick >= tick.toEpochMilli()) {
					long expiresAt = ZooKeeperLockBackend.saturatedAdd(stat.getMtime(), current.ttl);
					if (now < expiresAt) {
						return new TickClaim(TickClaim.Outcome.TAKEN, time);
					}
				}
				try {
					this.client.setData().withVersion(stat.getVersion()).forPath(path, claim);
					return new TickClaim(TickClaim.Outcome.CLAIMED, time);
				}
				catch (KeeperException.BadVersionException | KeeperException.NoNodeException raced) {
					// another claim moved the record first: read it again
				}
			}
			throw new LockBackendException("The zookeeper backend could not claim tick " + tick + " of lock '" + key
					+ "': the record changed under " + MAX_ATTEMPTS + " attempts in a row", null);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
		}
		catch (LockBackendException ex) {
			throw ex;
		}
		catch (Exception ex) {
			throw this.backend.failure("claim tick " + tick + " of", key, ex);
		}
	}

	/** The ensemble's time now: the time it stamps on a write to the clock node. */
	private long ensembleTime() throws Exception {
		try {
			return this.client.setData().forPath(this.clockPath, EMPTY).getMtime();
		}
		catch (KeeperException.NoNodeException ex) {
			try {
				this.client.create().creatingParentContainersIfNeeded().forPath(this.clockPath, EMPTY);
			}
			catch (KeeperException.NodeExistsException raced) {
				// created by another instance
			}
			return this.client.setData().forPath(this.clockPath, EMPTY).getMtime();
		}
	}

	private static byte[] encode(long tick, long ttl) {
		return (tick + " " + ttl).getBytes(StandardCharsets.US_ASCII);
	}

	/** The record in a node's data; {@code null} for data that is not a record (overwritten). */
	private static @Nullable Record decode(byte @Nullable [] data) {
		if (data == null) {
			return null;
		}
		String[] parts = new String(data, StandardCharsets.US_ASCII).split(" ");
		try {
			return (parts.length == 2) ? new Record(Long.parseLong(parts[0]), Long.parseLong(parts[1])) : null;
		}
		catch (NumberFormatException ex) {
			return null;
		}
	}

	private record Record(long tick, long ttl) {
	}

}
