package dev.holdfast;

/**
 * What an annotated method does when its lock cannot be acquired within the wait time.
 */
public enum OnLocked {

	/** Throw {@link LockNotAcquiredException}. */
	THROW,

	/**
	 * Do not run the method and return an empty result: {@code null}, {@code Optional.empty()},
	 * an empty {@code Mono}/{@code Flux}, or a completed future of {@code null}. Not allowed on
	 * methods returning a primitive.
	 */
	SKIP

}
