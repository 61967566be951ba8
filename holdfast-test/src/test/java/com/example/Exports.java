package com.example;

/** Where an application exports orders, with the writer's fencing token. */
public interface Exports {

	void write(Order order, long fencingToken);

}
