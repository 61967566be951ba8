package com.example;

/** Where an application books stock moves, with the writer's fencing token. */
public interface StockLedger {

	void book(StockMove move, long fencingToken);

}
