package com.example;

/** Where an application reads prices, reloaded by one writer with its fencing token. */
public interface PriceSource {

	long price(String sku);

	void reload(long fencingToken);

}
