package dev.holdfast;

/**
 * What an acquisition of a lock asks for (rules RWL-* in docs/DESIGN.md, decision 0048): many
 * readers or one writer hold a (name, key) at once.
 */
public enum LockMode {

	/**
	 * The exclusive lock, the default: one holder at a time, readers included. A plain lock and a
	 * {@code WRITE} of the same (name, key) are one lock.
	 */
	WRITE,

	/**
	 * A read hold, beside other readers of every instance and never beside a writer. A waiting
	 * writer blocks new readers. Reentrant; a thread holding the write lock may read; a thread
	 * holding a read hold that asks for {@code WRITE} fails at once (no upgrade). Needs a backend
	 * that gives read holds ({@link dev.holdfast.spi.SharedLocks}): elsewhere it fails loudly.
	 */
	READ

}
