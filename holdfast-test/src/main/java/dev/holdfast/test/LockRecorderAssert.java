package dev.holdfast.test;

import java.util.List;
import java.util.stream.Collectors;

import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

import dev.holdfast.test.LockRecorder.Acquisition;
import dev.holdfast.test.LockRecorder.Outcome;

/**
 * Assertions on what a {@link LockRecorder} saw, reached with AssertJ's
 * {@code assertThat(recorder)}.
 */
public class LockRecorderAssert extends AbstractAssert<LockRecorderAssert, LockRecorder> {

	LockRecorderAssert(LockRecorder actual) {
		super(actual, LockRecorderAssert.class);
	}

	/** Verifies that lock {@code name} (without a key) was acquired and then released. */
	public LockRecorderAssert ranUnder(String name) {
		return ranUnder(name, null);
	}

	/**
	 * Verifies that lock {@code name} with {@code key} was acquired and then released: the code
	 * it guards ran while this instance held it and returned (or threw) before the release. The
	 * key is the value of the annotation's {@code key} expression for the call, or the key passed
	 * to the lock template.
	 */
	public LockRecorderAssert ranUnder(String name, @Nullable Object key) {
		return hasAcquisition(name, key, Outcome.RELEASED, "acquired and released");
	}

	/**
	 * Verifies that an acquisition of lock {@code name} with {@code key} gave up because another
	 * owner held the lock for the whole wait time (an {@code onLocked = SKIP} method was skipped,
	 * or a {@code LockNotAcquiredException} was thrown).
	 */
	public LockRecorderAssert wasNotAcquired(String name, @Nullable Object key) {
		return hasAcquisition(name, key, Outcome.NOT_ACQUIRED, "not acquired (held by another owner)");
	}

	/** Verifies that no acquisition of lock {@code name}, with any key, was recorded. */
	public LockRecorderAssert neverLocked(String name) {
		isNotNull();
		List<Acquisition> found = this.actual.acquisitions().stream().filter((a) -> a.name().equals(name)).toList();
		if (!found.isEmpty()) {
			failWithMessage("Expected no acquisition of lock '%s', but recorded:%n%s", name, describe(found));
		}
		return this;
	}

	private LockRecorderAssert hasAcquisition(String name, @Nullable Object key, Outcome outcome, String what) {
		isNotNull();
		String backendKey = this.actual.keyFor(name, key);
		List<Acquisition> all = this.actual.acquisitions();
		boolean found = all.stream().anyMatch((a) -> a.key().equals(backendKey) && a.outcome() == outcome);
		if (!found) {
			failWithMessage("Expected lock '%s' with key %s (backend key '%s') %s, but recorded:%n%s", name, key,
					backendKey, what, all.isEmpty() ? "  no acquisition at all" : describe(all));
		}
		return this;
	}

	private static String describe(List<Acquisition> acquisitions) {
		return acquisitions.stream()
			.map((a) -> "  " + a.key() + " " + a.outcome() + " on thread " + a.thread())
			.collect(Collectors.joining(System.lineSeparator()));
	}

}
