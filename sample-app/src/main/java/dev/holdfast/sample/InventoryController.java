package dev.holdfast.sample;

import java.util.Map;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * HTTP access to the inventory.
 */
@RestController
public class InventoryController {

	private final InventoryService inventory;

	public InventoryController(InventoryService inventory) {
		this.inventory = inventory;
	}

	@PostMapping("/reserve/{sku}")
	public Map<String, Object> reserve(@PathVariable String sku) throws InterruptedException {
		long token = this.inventory.reserve(sku);
		return Map.of("sku", sku, "reserved", token >= 0, "fencingToken", token);
	}

	@GetMapping("/stock")
	public Map<String, Integer> stock() {
		return this.inventory.stock();
	}

}
