package dev.holdfast.test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

import io.micrometer.observation.Observation;
import org.assertj.core.api.AssertProvider;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.LockListener;

/**
 * Records every lock acquisition of the application context it is a bean of, so that a test can
 * assert that a method ran under a given lock. Add it to a test's context with
 * {@code @Import(LockRecorder.class)}, inject it, and assert with AssertJ:
 *
 * <pre class="code">
 * orders.fulfil(42);
 * assertThat(recorder).ranUnder("fulfil", 42);
 * </pre>
 *
 * It is a {@link LockListener}: it sees what Holdfast's lock template does on any backend, for
 * annotated methods, scheduled jobs and programmatic use alike. It keeps the most recent
 * {@value #CAPACITY} acquisitions; {@link #clear()} forgets them.
 */
public class LockRecorder implements LockListener, BeanFactoryAware, AssertProvider<LockRecorderAssert> {

	/** How many acquisitions are kept; older ones are dropped. */
	public static final int CAPACITY = 10_000;

	private final Deque<Attempt> attempts = new ArrayDeque<>();

	private @Nullable BeanFactory beanFactory;

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = beanFactory;
	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		Attempt attempt = new Attempt(name, key, Thread.currentThread().getName());
		synchronized (this.attempts) {
			if (this.attempts.size() == CAPACITY) {
				this.attempts.removeFirst();
			}
			this.attempts.addLast(attempt);
		}
		return attempt;
	}

	/** The acquisitions recorded so far, oldest first, as they stand now. */
	public List<Acquisition> acquisitions() {
		List<Attempt> copy;
		synchronized (this.attempts) {
			copy = new ArrayList<>(this.attempts);
		}
		return copy.stream().map(Attempt::snapshot).toList();
	}

	/** Forgets every recorded acquisition, e.g. between the steps of one test. */
	public void clear() {
		synchronized (this.attempts) {
			this.attempts.clear();
		}
	}

	/**
	 * The backend key of lock {@code name} with {@code key}, as the context's lock template
	 * encodes it (with its key prefix).
	 */
	public String keyFor(String name, @Nullable Object key) {
		if (this.beanFactory == null) {
			throw new IllegalStateException(
					"LockRecorder is not a bean of an application context: add it with @Import(LockRecorder.class)");
		}
		AsyncLockTemplate template = this.beanFactory.getBeanProvider(AsyncLockTemplate.class).getIfUnique();
		if (template == null) {
			throw new IllegalStateException("LockRecorder found no unique Holdfast lock template in its context");
		}
		return template.keyFor(name, key);
	}

	@Override
	public LockRecorderAssert assertThat() {
		return new LockRecorderAssert(this);
	}

	/**
	 * One acquisition as the recorder saw it.
	 * @param name the lock name, without its key
	 * @param key the backend key ({@link #keyFor})
	 * @param thread the name of the thread that started the acquisition
	 * @param outcome how the acquisition ended and, if it was acquired, how the hold ended
	 * @param fencingToken the lease's fencing token, or 0 when the lock was not acquired
	 */
	public record Acquisition(String name, String key, String thread, Outcome outcome, long fencingToken) {
	}

	/** Where an acquisition stands. */
	public enum Outcome {

		/** Still waiting for the lock. */
		ACQUIRING,

		/** Acquired, and the lease is held now. */
		HELD,

		/** Acquired, and the lease was released: the locked code ran and returned. */
		RELEASED,

		/** Acquired, and the lease could not be renewed: another owner may have taken the lock. */
		LOST,

		/** The lock stayed held by another owner for the whole wait time. */
		NOT_ACQUIRED,

		/** The backend failed, or the arguments were invalid. */
		FAILED,

		/** The caller stopped waiting: interrupted, or its future cancelled. */
		CANCELLED

	}

	private static final class Attempt implements LockObservation {

		private final String name;

		private final String key;

		private final String thread;

		private volatile Outcome outcome = Outcome.ACQUIRING;

		private volatile long fencingToken;

		Attempt(String name, String key, String thread) {
			this.name = name;
			this.key = key;
			this.thread = thread;
		}

		Acquisition snapshot() {
			return new Acquisition(this.name, this.key, this.thread, this.outcome, this.fencingToken);
		}

		@Override
		public synchronized void acquired(long fencingToken) {
			if (this.outcome == Outcome.ACQUIRING) {
				this.fencingToken = fencingToken;
				this.outcome = Outcome.HELD;
			}
		}

		@Override
		public void notAcquired() {
			move(Outcome.ACQUIRING, Outcome.NOT_ACQUIRED);
		}

		@Override
		public void failed(Throwable ex) {
			move(Outcome.ACQUIRING, Outcome.FAILED);
		}

		@Override
		public void cancelled() {
			move(Outcome.ACQUIRING, Outcome.CANCELLED);
		}

		@Override
		public void released() {
			move(Outcome.HELD, Outcome.RELEASED);
		}

		@Override
		public void lost() {
			move(Outcome.HELD, Outcome.LOST);
		}

		/** The first outcome of each stage counts; later calls are ignored, as the contract says. */
		private synchronized void move(Outcome from, Outcome to) {
			if (this.outcome == from) {
				this.outcome = to;
			}
		}

		@Override
		public Observation hold() {
			return Observation.NOOP;
		}

		@Override
		public Observation.Scope openScope() {
			return Observation.Scope.NOOP;
		}

	}

}
