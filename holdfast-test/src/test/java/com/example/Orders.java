package com.example;

import java.util.List;

/** An application's order repository. */
public interface Orders {

	List<Order> pending();

}
