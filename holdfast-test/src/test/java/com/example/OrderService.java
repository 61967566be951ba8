package com.example;

import org.springframework.stereotype.Service;

import dev.holdfast.DistributedLock;

/** An application service with a locked method: the README's example test calls it. */
@Service
public class OrderService {

	@DistributedLock(name = "fulfil", key = "#orderId")
	public void fulfil(long orderId) {
	}

}
