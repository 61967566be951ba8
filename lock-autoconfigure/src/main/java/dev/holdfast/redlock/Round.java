package dev.holdfast.redlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

import org.jspecify.annotations.Nullable;
import org.redisson.client.RedisTimeoutException;

import dev.holdfast.LockBackendException;

/**
 * One request sent to several nodes at once. The answers are recorded as they arrive (on the
 * backend's I/O thread for the scripts and pings; on Redisson's threads for requests made through
 * the nodes' clients); the caller waits until the decision predicate holds, every node has
 * answered, or the deadline passes, whichever comes first.
 */
final class Round {

	private final List<Node> nodes;

	private final AtomicReferenceArray<@Nullable Object> results;

	private final List<CompletableFuture<?>> calls;

	private final AtomicInteger answered = new AtomicInteger();

	private final CompletableFuture<Void> decided = new CompletableFuture<>();

	private final Predicate<Round> decision;

	// The answers as they stood when the caller stopped waiting; later answers do not change
	// the caller's view, so that its decision and its error message agree.
	private volatile @Nullable Object @Nullable [] frozen;

	// Whether the caller stopped waiting at the deadline, before the round was decided.
	private volatile boolean timedOut;

	private Round(List<Node> nodes, Predicate<Round> decision) {
		this.nodes = nodes;
		this.results = new AtomicReferenceArray<>(nodes.size());
		this.calls = new ArrayList<>(nodes.size());
		this.decision = decision;
	}

	static Round send(List<Node> nodes, Function<Node, CompletionStage<?>> call, Predicate<Round> decision) {
		Round round = new Round(nodes, decision);
		if (nodes.isEmpty()) {
			round.decided.complete(null);
		}
		for (int i = 0; i < nodes.size(); i++) {
			int index = i;
			CompletableFuture<?> future;
			try {
				future = call.apply(nodes.get(i)).toCompletableFuture();
			}
			catch (RuntimeException ex) {
				future = CompletableFuture.failedFuture(ex);
			}
			round.calls.add(future);
			future.whenComplete((value, error) -> round.record(index, value, error));
		}
		return round;
	}

	private void record(int index, @Nullable Object value, @Nullable Throwable error) {
		Object result = (error != null) ? new Failure(unwrap(error))
				: (value != null) ? value : new Failure(new IllegalStateException("empty reply"));
		this.results.set(index, result);
		if (this.answered.incrementAndGet() == this.nodes.size() || this.decision.test(this)) {
			this.decided.complete(null);
		}
	}

	/**
	 * Waits for the decision or the deadline, then freezes the caller's view of the answers:
	 * the nodes that have not answered by then count as failed, timed out when the deadline
	 * passed first.
	 */
	void await(long deadline) throws InterruptedException {
		try {
			long remaining = deadline - System.nanoTime();
			if (!this.decided.isDone()) {
				if (remaining > 0) {
					this.decided.get(remaining, TimeUnit.NANOSECONDS);
				}
				else {
					this.timedOut = true;
				}
			}
		}
		catch (TimeoutException ex) {
			this.timedOut = true;
		}
		catch (ExecutionException ex) {
			// Never completed exceptionally.
		}
		finally {
			Object[] snapshot = new Object[this.results.length()];
			for (int i = 0; i < snapshot.length; i++) {
				snapshot[i] = this.results.get(i);
				if (snapshot[i] == null && this.timedOut) {
					this.nodes.get(i).connection().markUnresponsive();
				}
			}
			this.frozen = snapshot;
		}
	}

	int size() {
		return this.nodes.size();
	}

	/** Whether the caller stopped waiting at the deadline, before the round was decided. */
	boolean timedOut() {
		return this.timedOut;
	}

	Node node(int index) {
		return this.nodes.get(index);
	}

	/** The answer of a node: its reply, a {@link Failure}, or {@code null} while pending. */
	@Nullable Object result(int index) {
		Object[] snapshot = this.frozen;
		return (snapshot != null) ? snapshot[index] : this.results.get(index);
	}

	/** The number of nodes that replied, failures and pending requests not counted. */
	int answered() {
		return count((reply) -> true);
	}

	/** The number of nodes whose request failed. */
	int failed() {
		int count = 0;
		for (int i = 0; i < this.results.length(); i++) {
			if (result(i) instanceof Failure) {
				count++;
			}
		}
		return count;
	}

	int count(Predicate<Object> replyMatches) {
		int count = 0;
		for (int i = 0; i < this.results.length(); i++) {
			Object result = result(i);
			if (result != null && !(result instanceof Failure) && replyMatches.test(result)) {
				count++;
			}
		}
		return count;
	}

	void whenCompletes(int index, Consumer<Node> action) {
		Node node = this.nodes.get(index);
		this.calls.get(index).whenComplete((value, error) -> action.accept(node));
	}

	/**
	 * The number of nodes that have not answered yet and are not {@linkplain NodeConnection#unresponsive()
	 * unresponsive}: those whose answer is worth waiting for.
	 */
	int pendingResponsive() {
		int count = 0;
		for (int i = 0; i < this.results.length(); i++) {
			if (result(i) == null && !this.nodes.get(i).connection().unresponsive()) {
				count++;
			}
		}
		return count;
	}

	/** The number of nodes that have not answered yet. */
	int pending() {
		int count = 0;
		for (int i = 0; i < this.results.length(); i++) {
			if (result(i) == null) {
				count++;
			}
		}
		return count;
	}

	void whenAllComplete(Runnable action) {
		CompletableFuture.allOf(this.calls.toArray(CompletableFuture[]::new)).whenComplete((value, error) -> action.run());
	}

	void whenEachCompletes(Consumer<Node> action) {
		for (int i = 0; i < this.nodes.size(); i++) {
			if (this.results.get(i) == null) {
				whenCompletes(i, action);
			}
		}
	}

	private static Throwable unwrap(Throwable error) {
		Throwable current = error;
		while ((current instanceof CompletionException
				|| current instanceof ExecutionException) && current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

	/**
	 * Waits like {@link #await}; an interrupted caller gets a {@link LockBackendException} saying
	 * what it was doing, with its interrupt flag set again.
	 */
	void awaitOrFail(long deadline, String action) {
		try {
			await(deadline);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockBackendException("Interrupted while " + action, ex);
		}
	}

	/**
	 * The failure of a round that fewer than {@code quorum} nodes answered. Says how many nodes
	 * answered, failed, and timed out (no answer by the deadline, or the client's own timeout),
	 * against the quorum, as the caller saw them when it stopped waiting: answers that came later
	 * are not counted. Nodes still pending when the outcome was already certain were not waited
	 * for.
	 */
	LockBackendException unreachable(String action, int quorum, Duration nodeTimeout) {
		int failed = 0;
		int timedOut = 0;
		int notAwaited = 0;
		StringBuilder details = new StringBuilder();
		Throwable cause = null;
		for (int i = 0; i < size(); i++) {
			Object result = result(i);
			String detail;
			if (result instanceof Failure failure && !isTimeout(failure.cause())) {
				failed++;
				detail = describe(result);
				cause = (cause != null) ? cause : failure.cause();
			}
			else if (result instanceof Failure || (result == null && timedOut())) {
				timedOut++;
				detail = "timed out";
			}
			else if (result == null) {
				notAwaited++;
				detail = "not awaited";
			}
			else {
				continue;
			}
			details.append("; ").append(node(i).name()).append(": ").append(detail);
		}
		StringBuilder message = new StringBuilder("Redlock quorum not reached while ").append(action)
			.append(": ")
			.append(answered())
			.append(" of ")
			.append(size())
			.append(" nodes answered, ")
			.append(quorum)
			.append(" needed; ")
			.append(failed)
			.append(" failed, ")
			.append(timedOut)
			.append(" timed out (node timeout ")
			.append(nodeTimeout.toMillis())
			.append(" ms)");
		if (notAwaited > 0) {
			message.append(", ").append(notAwaited).append(" not awaited (the quorum was out of reach)");
		}
		return new LockBackendException(message.append(details).toString(), cause);
	}

	/** A node's answer, or why there is none, in words. */
	static String describe(@Nullable Object result) {
		if (result == null) {
			return "no answer in time";
		}
		if (result instanceof Failure failure) {
			return failure.cause().getClass().getSimpleName() + ": " + failure.cause().getMessage();
		}
		return "unexpected answer " + result;
	}

	static boolean isTimeout(Throwable failure) {
		return failure instanceof RedisTimeoutException || failure instanceof TimeoutException;
	}

	/** A request to a node that failed. */
	record Failure(Throwable cause) {
	}

}
