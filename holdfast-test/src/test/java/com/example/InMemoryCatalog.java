package com.example;

import java.util.concurrent.atomic.AtomicLong;

import org.springframework.stereotype.Component;

/**
 * Stands for an application's own {@link Catalog} bean in the contexts of the example tests
 * ({@code CatalogRefreshTests} replaces it with a mock).
 */
@Component
public class InMemoryCatalog implements Catalog {

	private final AtomicLong lastToken = new AtomicLong();

	@Override
	public void reload(long fencingToken) {
		this.lastToken.accumulateAndGet(fencingToken, Math::max);
	}

}
