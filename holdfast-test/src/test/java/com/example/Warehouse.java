package com.example;

/** A resource that accepts writes carrying a fencing token. */
public interface Warehouse {

	void ship(Order order, long fencingToken);

}
