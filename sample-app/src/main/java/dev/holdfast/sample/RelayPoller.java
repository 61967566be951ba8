package dev.holdfast.sample;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

import dev.holdfast.LeaderOnly;

/**
 * A poller that must run on one instance at a time, as an outbox relay or a queue consumer does:
 * Holdfast starts it when this instance is granted the leadership of group {@value #GROUP} and
 * stops it when the term is revoked, before another instance can be granted it. It polls every
 * {@code sample.relay.interval} (500 ms) and counts its passes; {@code GET /actuator/leaders}
 * shows which instance leads, its term's fencing token and since when. On unless
 * {@code sample.relay.enabled=false}.
 */
@Component
@LeaderOnly(RelayPoller.GROUP)
@ConditionalOnProperty(name = "sample.relay.enabled", havingValue = "true", matchIfMissing = true)
public class RelayPoller implements SmartLifecycle {

	/** The leader group. */
	public static final String GROUP = "sample-relay";

	private static final Log logger = LogFactory.getLog(RelayPoller.class);

	private final Duration interval;

	private final AtomicLong passes = new AtomicLong();

	private @Nullable Thread thread;

	public RelayPoller(@Value("${sample.relay.interval:500ms}") Duration interval) {
		this.interval = interval;
	}

	@Override
	public synchronized void start() {
		if (this.thread != null) {
			return;
		}
		Thread poller = new Thread(this::poll, "sample-relay");
		poller.setDaemon(true);
		this.thread = poller;
		poller.start();
		logger.info("Leading group '" + GROUP + "': relay started");
	}

	@Override
	public void stop() {
		Thread poller;
		synchronized (this) {
			poller = this.thread;
			this.thread = null;
		}
		if (poller == null) {
			return;
		}
		poller.interrupt();
		try {
			poller.join(this.interval.toMillis() + 1000);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		logger.info("No longer leading group '" + GROUP + "': relay stopped after " + this.passes.get() + " passes");
	}

	@Override
	public synchronized boolean isRunning() {
		return this.thread != null;
	}

	/** Passes made while this instance led, over all its terms. */
	public long passes() {
		return this.passes.get();
	}

	private void poll() {
		while (!Thread.currentThread().isInterrupted()) {
			// a real relay reads its outbox here and writes with the term's fencing token
			this.passes.incrementAndGet();
			try {
				Thread.sleep(this.interval.toMillis());
			}
			catch (InterruptedException ex) {
				return;
			}
		}
	}

}
