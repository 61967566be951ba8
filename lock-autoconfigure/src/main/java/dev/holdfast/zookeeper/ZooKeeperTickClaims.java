package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.UUID;

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
 * <li>A claim whose answer was lost is still claimed. The claim's write also stores a random id
 * of the claim in the record's child {@value #CLAIM_ID_NODE}, in the same transaction. When the
 * connection breaks after the ensemble applied that transaction, Curator resends it, and the
 * resent write fails ({@code BadVersion}, {@code NodeExists}) on the record it moved itself; a
 * claim whose write failed that way and that then finds its own tick recorded reads the child,
 * and its own id there means its write was applied: {@code CLAIMED}. Two claims of one tick write
 * identical records, so only the id tells them apart. (If a later claim moved the record on
 * before the resent write was answered, the id is that claim's and the tick runs nowhere:
 * {@code TAKEN}, never twice.)</li>
 * <li>The record's data is {@code <tick> <ttl>}; the claim's id is its one child.</li>
 * </ul>
 */
final class ZooKeeperTickClaims {

	/** Racing writers each move the record forward; a claimer rereads at most this often. */
	private static final int MAX_ATTEMPTS = 32;

	/** The child of a record that holds the id of the claim that wrote the record last. */
	static final String CLAIM_ID_NODE = "claim";

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final String ticksPath;

	private final ZooKeeperClock clock;

	ZooKeeperTickClaims(ZooKeeperLockBackend backend) {
		this.backend = backend;
		this.client = backend.client();
		this.ticksPath = backend.path("ticks");
		this.clock = new ZooKeeperClock(backend);
	}

	TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		try {
			this.backend.awaitConnected("claim a tick of", key);
			long now = this.clock.stamp("claim a tick of", key,
					System.nanoTime() + this.backend.connectionTimeoutNanos());
			Instant time = Instant.ofEpochMilli(now);
			if (Math.abs(now - tick.toEpochMilli()) > tolerance.toMillis()) {
				return new TickClaim(TickClaim.Outcome.NOT_DUE, time);
			}
			String path = this.ticksPath + "/" + ZooKeeperPaths.encode(key);
			String idPath = path + "/" + CLAIM_ID_NODE;
			byte[] claim = encode(tick.toEpochMilli(), Math.max(1, ttl.toMillis()));
			byte[] id = UUID.randomUUID().toString().getBytes(StandardCharsets.US_ASCII);
			// Set once a write of this claim failed on a record that another write had moved: if
			// Curator resent it after a lost answer, that other write may have been this claim's own.
			boolean wrote = false;
			for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
				Stat stat = new Stat();
				byte[] data;
				try {
					data = this.client.getData().storingStatIn(stat).forPath(path);
				}
				catch (KeeperException.NoNodeException ex) {
					try {
						this.client.transaction()
							.forOperations(this.client.transactionOp().create().forPath(path, claim),
									this.client.transactionOp().create().forPath(idPath, id));
						return new TickClaim(TickClaim.Outcome.CLAIMED, time);
					}
					catch (KeeperException.NodeExistsException raced) {
						wrote = true;
						continue;
					}
					catch (KeeperException.NoNodeException noParent) {
						// nothing applied: the first record under this base path
						this.client.createContainers(this.ticksPath);
						continue;
					}
				}
				Record current = decode(data);
				if (current != null && current.tick >= tick.toEpochMilli()) {
					long expiresAt = ZooKeeperLockQueue.saturatedAdd(stat.getMtime(), current.ttl);
					if (now < expiresAt) {
						boolean own = wrote && current.tick == tick.toEpochMilli() && claimedBy(idPath, id);
						return new TickClaim(own ? TickClaim.Outcome.CLAIMED : TickClaim.Outcome.TAKEN, time);
					}
				}
				try {
					// The child is created with the record's first claim here, or set.
					this.client.transaction()
						.forOperations(this.client.transactionOp().setData().withVersion(stat.getVersion()).forPath(path, claim),
								(stat.getNumChildren() == 0) ? this.client.transactionOp().create().forPath(idPath, id)
										: this.client.transactionOp().setData().forPath(idPath, id));
					return new TickClaim(TickClaim.Outcome.CLAIMED, time);
				}
				catch (KeeperException.BadVersionException | KeeperException.NoNodeException
						| KeeperException.NodeExistsException raced) {
					// another claim moved the record first, or this claim's own resent write: read it again
					wrote = true;
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

	/** Whether the claim id node holds {@code id}: the write of that claim was applied. */
	private boolean claimedBy(String idPath, byte[] id) throws Exception {
		try {
			return Arrays.equals(this.client.getData().forPath(idPath), id);
		}
		catch (KeeperException.NoNodeException ex) {
			return false;
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
