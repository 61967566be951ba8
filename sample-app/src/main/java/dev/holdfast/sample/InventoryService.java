package dev.holdfast.sample;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.jdbc.JdbcFencingGuard;

/**
 * Reserves stock per SKU in the shared database. The read-modify-write in {@link #reserve} is
 * safe because the lock serialises it across every instance, and the write is fenced: it is
 * accepted only if no later lock holder has written the row, so even a holder that paused past
 * its lease cannot overwrite a newer quantity.
 */
@Service
public class InventoryService {

	private static final Log logger = LogFactory.getLog(InventoryService.class);

	private final JdbcTemplate jdbc;

	private final JdbcFencingGuard stockGuard;

	private final SampleProperties properties;

	public InventoryService(JdbcTemplate jdbc, SampleProperties properties) {
		this.jdbc = jdbc;
		this.stockGuard = new JdbcFencingGuard(jdbc, "stock", "sku", "fence");
		this.properties = properties;
	}

	/**
	 * Inserts the configured stock for every SKU that is not in the table yet; SKUs already there
	 * (another instance inserted them) keep their quantity.
	 */
	@EventListener(ApplicationReadyEvent.class)
	public void insertMissingStock() {
		this.properties.getStock().forEach((sku, qty) -> {
			if (qty < 0) {
				throw new IllegalArgumentException("sample.stock." + sku + " must not be negative, was " + qty);
			}
			try {
				this.jdbc.update("INSERT INTO stock (sku, qty, fence) SELECT ?, ?, 0 WHERE NOT EXISTS "
						+ "(SELECT 1 FROM stock WHERE sku = ?)", sku, qty, sku);
			}
			catch (DuplicateKeyException ex) {
				// another instance inserted it at the same moment: keep theirs
			}
		});
	}

	/**
	 * Takes one unit of {@code sku}, holding the lock {@code inventory:<sku>} around a transaction.
	 * @throws UnknownSkuException if the stock table has no such SKU
	 * @throws dev.holdfast.LockNotAcquiredException if another caller held the lock for the whole
	 * wait time
	 */
	@DistributedLock(name = "inventory", key = "#sku", waitTime = "${sample.reserve-wait-time:10s}")
	@Transactional
	public Reservation reserve(String sku) {
		Lease lease = LockContext.requireLease();
		List<Integer> found = this.jdbc.queryForList("SELECT qty FROM stock WHERE sku = ?", Integer.class, sku);
		if (found.isEmpty()) {
			throw new UnknownSkuException(sku);
		}
		int available = found.get(0);
		long token = lease.fencingToken();
		if (available <= 0) {
			return new Reservation(sku, Reservation.Status.SOLD_OUT, token, this.properties.getInstanceId());
		}
		if (!this.stockGuard.update(sku, token, Map.of("qty", available - 1))) {
			Long written = this.jdbc.queryForObject("SELECT fence FROM stock WHERE sku = ?", Long.class, sku);
			logger.warn("Reservation of " + sku + " fenced off: this holder's fencing token " + token
					+ " is lower than the token " + written + " that already wrote the row. Either this lease was lost "
					+ "(see lost-lease WARNs) or the backend issued a lower token to a later holder.");
			return new Reservation(sku, Reservation.Status.FENCED, token, this.properties.getInstanceId());
		}
		this.jdbc.update("INSERT INTO reservation (sku, fence, instance_id, reserved_at) VALUES (?, ?, ?, ?)", sku,
				token, this.properties.getInstanceId(), System.currentTimeMillis());
		return new Reservation(sku, Reservation.Status.RESERVED, token, this.properties.getInstanceId());
	}

	/**
	 * The stock table.
	 */
	public List<Stock> stock() {
		return this.jdbc.query("SELECT sku, qty, fence FROM stock ORDER BY sku",
				(rs, row) -> new Stock(rs.getString(1), rs.getInt(2), rs.getLong(3)));
	}

	/**
	 * Reservations recorded per SKU.
	 */
	public Map<String, Long> reservationCounts() {
		Map<String, Long> counts = new TreeMap<>();
		this.jdbc.query("SELECT sku, COUNT(*) FROM reservation GROUP BY sku",
				(rs) -> {
					counts.put(rs.getString(1), rs.getLong(2));
				});
		return counts;
	}

	/**
	 * One row of the stock table.
	 *
	 * @param sku the SKU
	 * @param qty units left
	 * @param fence the highest fencing token that wrote the row
	 */
	public record Stock(String sku, int qty, long fence) {
	}

}
