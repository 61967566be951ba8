package dev.holdfast.sample;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.springframework.stereotype.Service;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockContext;

/**
 * Reserves stock per SKU. The read-modify-write below is only safe because the lock serialises
 * it: no two callers, in this instance or another, reserve the same SKU at once.
 */
@Service
public class InventoryService {

	private final Map<String, Integer> stock = new ConcurrentHashMap<>();

	public InventoryService() {
		this.stock.put("apple", 100);
		this.stock.put("pear", 100);
	}

	/**
	 * Takes one unit of {@code sku}.
	 * @return the fencing token of the reservation, or -1 when the SKU is sold out
	 */
	@DistributedLock(name = "inventory", key = "#sku", waitTime = "5s")
	public long reserve(String sku) throws InterruptedException {
		int available = this.stock.getOrDefault(sku, 0);
		if (available <= 0) {
			return -1;
		}
		Thread.sleep(2);
		this.stock.put(sku, available - 1);
		return LockContext.requireLease().fencingToken();
	}

	public Map<String, Integer> stock() {
		return Map.copyOf(this.stock);
	}

}
