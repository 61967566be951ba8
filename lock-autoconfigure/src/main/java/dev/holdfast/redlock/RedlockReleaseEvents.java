package dev.holdfast.redlock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import org.redisson.api.RTopic;
import org.redisson.client.codec.StringCodec;

/**
 * The release events of a Redlock backend: every node publishes {@code "<key> <owner>"} on the
 * release channel ({@link RedlockSettings#releaseChannel()}) when it deletes a lock; a subscriber
 * hears each release once, although every node announces it. One instance is one subscription:
 * Redisson registers it on each node in the background, and it listens once a quorum of nodes
 * registered it (RDL-8): a lock is held on a quorum, and its release is published by every node
 * that deleted it, so any quorum of listening nodes hears it; waiting for all would leave a
 * subscription with one node down never listening.
 */
final class RedlockReleaseEvents implements AutoCloseable {

	private static final int RECENT_RELEASES = 1024;

	private final List<RTopic> topics = new ArrayList<>();

	private final List<CompletableFuture<Integer>> registrations = new ArrayList<>();

	private final int quorum;

	private RedlockReleaseEvents(int quorum) {
		this.quorum = quorum;
	}

	/**
	 * Subscribes to releases on {@code channel} on every node of {@code nodes}. A release of one
	 * lock is delivered once (the last 1,024 releases are remembered to drop the copies); the
	 * listener runs on a Redisson thread and must not block. A node whose subscription fails
	 * delivers nothing.
	 * @return the subscription, which closes the node's subscriptions when closed
	 */
	static RedlockReleaseEvents subscribe(List<Node> nodes, int quorum, String channel, Consumer<String> listener) {
		Set<String> recent = Collections.newSetFromMap(new LinkedHashMap<>(64, 0.75f, false) {
			@Override
			protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
				return size() > RECENT_RELEASES;
			}
		});
		RedlockReleaseEvents events = new RedlockReleaseEvents(quorum);
		for (Node node : nodes) {
			RTopic topic = node.client().getTopic(channel, StringCodec.INSTANCE);
			events.topics.add(topic);
			events.registrations.add(topic.addListenerAsync(String.class, (from, message) -> {
				boolean first;
				synchronized (recent) {
					first = recent.add(message);
				}
				int space = message.indexOf(' ');
				if (first && space > 0) {
					listener.accept(message.substring(0, space));
				}
			}).toCompletableFuture());
		}
		return events;
	}

	/** Whether a quorum of nodes registered this subscription (deliveries have started). */
	boolean isListening() {
		int registered = 0;
		for (CompletableFuture<Integer> registration : this.registrations) {
			if (registration.isDone() && !registration.isCompletedExceptionally()) {
				registered++;
			}
		}
		return registered >= this.quorum;
	}

	@Override
	public void close() {
		for (int i = 0; i < this.topics.size(); i++) {
			RTopic topic = this.topics.get(i);
			this.registrations.get(i).thenAccept((id) -> topic.removeListenerAsync(id));
		}
	}

}
