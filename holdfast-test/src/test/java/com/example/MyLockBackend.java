package com.example;

import dev.holdfast.memory.InMemoryLockBackend;

/**
 * Stands for a reader's own {@code LockBackend}, a client of their lock server, in the README's
 * "Testing a backend of your own" snippet (which is compiled, not run).
 */
public class MyLockBackend extends InMemoryLockBackend {

	public MyLockBackend(String serverAddress) {
	}

}
