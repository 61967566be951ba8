package dev.holdfast.redlock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

import org.redisson.api.RTopic;
import org.redisson.client.codec.StringCodec;

/**
 * The release events of a Redlock backend: every node publishes {@code "<key> <owner>"} on the
 * release channel ({@link RedlockSettings#releaseChannel()}) when it deletes a lock; a subscriber
 * hears each release once, although every node announces it.
 */
final class RedlockReleaseEvents {

	private static final int RECENT_RELEASES = 1024;

	private RedlockReleaseEvents() {
	}

	/**
	 * Subscribes to releases on {@code channel} on every node of {@code nodes}. A release of one
	 * lock is delivered once (the last 1,024 releases are remembered to drop the copies); the
	 * listener runs on a Redisson thread and must not block. A node whose subscription fails
	 * delivers nothing.
	 * @return closes the subscriptions
	 */
	static AutoCloseable subscribe(List<Node> nodes, String channel, Consumer<String> listener) {
		Set<String> recent = Collections.newSetFromMap(new LinkedHashMap<>(64, 0.75f, false) {
			@Override
			protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
				return size() > RECENT_RELEASES;
			}
		});
		List<RTopic> topics = new ArrayList<>();
		List<CompletionStage<Integer>> registrations = new ArrayList<>();
		for (Node node : nodes) {
			RTopic topic = node.client().getTopic(channel, StringCodec.INSTANCE);
			topics.add(topic);
			registrations.add(topic.addListenerAsync(String.class, (from, message) -> {
				boolean first;
				synchronized (recent) {
					first = recent.add(message);
				}
				int space = message.indexOf(' ');
				if (first && space > 0) {
					listener.accept(message.substring(0, space));
				}
			}));
		}
		return () -> {
			for (int i = 0; i < topics.size(); i++) {
				RTopic topic = topics.get(i);
				registrations.get(i).thenAccept((id) -> topic.removeListenerAsync(id));
			}
		};
	}

}
