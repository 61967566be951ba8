package com.example;

/** An application's order, keyed by its id. */
public class Order {

	private final String id;

	public Order(String id) {
		this.id = id;
	}

	public String getId() {
		return this.id;
	}

}
