package com.example;

import java.time.Duration;
import java.util.Optional;

import org.springframework.stereotype.Service;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

@Service
public class CatalogRefresh {

	private final LockTemplate locks;

	private final Catalog catalog;

	public CatalogRefresh(LockTemplate locks, Catalog catalog) {
		this.locks = locks;
		this.catalog = catalog;
	}

	/** Reloads the catalog unless another instance is reloading it now; true if it ran here. */
	public boolean refresh() {
		LockOptions once = LockOptions.defaults().waitTime(Duration.ZERO);
		Optional<Lease> lease = this.locks.tryAcquire("catalog-refresh", null, once);
		if (lease.isEmpty()) {
			return false;
		}
		try (Lease held = lease.get()) {
			this.catalog.reload(held.fencingToken());
			return true;
		}
	}

}
