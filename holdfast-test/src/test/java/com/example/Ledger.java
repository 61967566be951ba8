package com.example;

/** Where an application books debits and credits, with the writer's fencing token per account. */
public interface Ledger {

	void debit(Account account, long amount, long fencingToken);

	void credit(Account account, long amount, long fencingToken);

}
