package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;
import org.springframework.util.Assert;

import dev.holdfast.spi.WaiterHandoff.Reservations;

/**
 * The one release subscription of a {@link RedisLockBackend}: a listener container on the
 * release channel, opened on the backend's own thread the first time a listener is added (retried
 * every second until Redis answers), that then follows the client's reconnections by itself, and
 * dispatches each reservation of a lock for a waiter to every listener.
 */
final class RedisReleaseSubscription implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(RedisLockBackend.class);

	/** How long a subscription attempt may take, and the pause between two after Redis failed. */
	private static final Duration SUBSCRIPTION_RECOVERY = Duration.ofSeconds(1);

	/** How long the subscription's threads live idle. */
	static final Duration IDLE_THREAD_KEEP_ALIVE = Duration.ofSeconds(1);

	private final RedisConnectionFactory connectionFactory;

	private final String channel;

	private final List<Listener> listeners = new CopyOnWriteArrayList<>();

	private final ReentrantLock lifecycleLock = new ReentrantLock();

	/** A daemon thread, started when needed, that (re)subscribes for the container. */
	private final ExecutorService subscriptionExecutor = daemonThread("holdfast-redis-subscription");

	/**
	 * A daemon thread that opens the subscription the first time, retrying until Redis answers:
	 * opening it can wait for a connection timeout (a silent network drops the handshake), and
	 * no caller may wait for that. Messages arrive on the client's I/O thread, not on this one.
	 */
	private final ExecutorService openingExecutor = daemonThread("holdfast-redis-subscribe");

	private @Nullable RedisMessageListenerContainer container;

	private boolean opening;

	/** Incremented when the last listener leaves: an opening started before then gives up. */
	private int generation;

	private volatile boolean closed;

	RedisReleaseSubscription(RedisConnectionFactory connectionFactory, String channel) {
		this.connectionFactory = connectionFactory;
		this.channel = channel;
	}

	/**
	 * Adds a listener of released keys; the first call starts opening the subscription on the
	 * opening thread, without waiting for it.
	 * @return a handle that stops deliveries to this listener when closed
	 * @throws IllegalStateException if the subscription is closed
	 */
	AutoCloseable subscribe(Consumer<String> released, @Nullable Reservations reserved) {
		Assert.notNull(released, "'listener' must not be null");
		Listener listener = new Listener(released, reserved);
		this.lifecycleLock.lock();
		try {
			if (this.closed) {
				throw new IllegalStateException("The Redis lock backend is closed");
			}
			this.listeners.add(listener);
			if (!this.opening) {
				this.opening = true;
				int generation = this.generation;
				this.openingExecutor.execute(() -> openSubscription(generation));
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
		return () -> unsubscribe(listener);
	}

	/**
	 * Stops deliveries to {@code listener}; when it was the last one, closes the subscription
	 * (while the connection factory is still open: the template unsubscribes when the application
	 * context stops, before the factory stops, whose client would otherwise close the
	 * subscription's connection first and make this close log a WARN). A later subscription opens
	 * it again.
	 */
	private void unsubscribe(Listener listener) {
		RedisMessageListenerContainer toClose = null;
		this.lifecycleLock.lock();
		try {
			if (this.listeners.remove(listener) && this.listeners.isEmpty()) {
				toClose = this.container;
				this.container = null;
				this.opening = false;
				this.generation++;
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
		if (toClose != null) {
			destroy(toClose);
		}
	}

	/** Whether the release subscription is open and listening. */
	boolean isListening() {
		RedisMessageListenerContainer current = this.container;
		return current != null && current.isListening();
	}

	/**
	 * Opens the subscription, once a second until Redis answers, the backend closes or its last
	 * listener leaves ({@code generation} changed).
	 */
	private void openSubscription(int generation) {
		int failures = 0;
		while (!Thread.currentThread().isInterrupted()) {
			RedisMessageListenerContainer candidate = newContainer();
			this.lifecycleLock.lock();
			try {
				if (this.closed || this.generation != generation) {
					return;
				}
				this.container = candidate;
			}
			finally {
				this.lifecycleLock.unlock();
			}
			try {
				candidate.start();
				if (!isCurrent(candidate)) {
					// The last listener left while it opened.
					destroy(candidate);
					return;
				}
				if (failures > 0) {
					logger.info("Redis subscription to channel '" + this.channel + "' open after " + failures
							+ " failed attempt(s)");
				}
				return;
			}
			catch (RuntimeException ex) {
				destroy(candidate);
				if (isAbandoned(generation)) {
					// Closed (or left) while it opened: the failure is the close's, not Redis's (SHD-5).
					logger.debug("Redis subscribe to channel '" + this.channel + "' abandoned: closed while it opened",
							ex);
					return;
				}
				failures++;
				String message = "Redis subscribe to channel '" + this.channel + "' failed (attempt " + failures
						+ "); waiters poll until it opens: " + NestedExceptionUtils.getMostSpecificCause(ex).getMessage();
				if (failures == 1) {
					logger.warn(message);
				}
				else {
					logger.debug(message);
				}
			}
			try {
				Thread.sleep(SUBSCRIPTION_RECOVERY.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Whether the subscription closed or its last listener left since the opening of {@code generation} began. */
	private boolean isAbandoned(int generation) {
		this.lifecycleLock.lock();
		try {
			return this.closed || this.generation != generation;
		}
		finally {
			this.lifecycleLock.unlock();
		}
	}

	private boolean isCurrent(RedisMessageListenerContainer candidate) {
		this.lifecycleLock.lock();
		try {
			return this.container == candidate;
		}
		finally {
			this.lifecycleLock.unlock();
		}
	}

	private RedisMessageListenerContainer newContainer() {
		RedisMessageListenerContainer listenerContainer = new RedisMessageListenerContainer();
		listenerContainer.setConnectionFactory(this.connectionFactory);
		// Listeners must not block: running them on the client's I/O thread avoids a thread per
		// message.
		listenerContainer.setTaskExecutor(Runnable::run);
		// Re-subscribing after Redis comes back waits and sleeps: on a thread of ours, never on a
		// caller's (the task executor above is the default for it).
		listenerContainer.setSubscriptionExecutor(this.subscriptionExecutor);
		listenerContainer.setRecoveryInterval(SUBSCRIPTION_RECOVERY.toMillis());
		listenerContainer.setMaxSubscriptionRegistrationWaitingTime(SUBSCRIPTION_RECOVERY.toMillis());
		listenerContainer.setBeanName("holdfastReleaseEvents");
		listenerContainer.setErrorHandler((ex) -> logger.warn("Release notification failed", ex));
		listenerContainer.addMessageListener(new Dispatcher(), new ChannelTopic(this.channel));
		listenerContainer.afterPropertiesSet();
		return listenerContainer;
	}

	/** Closes the subscription and its threads; later subscriptions are refused. */
	@Override
	public void close() {
		RedisMessageListenerContainer toClose;
		this.lifecycleLock.lock();
		try {
			this.closed = true;
			toClose = this.container;
			this.container = null;
		}
		finally {
			this.lifecycleLock.unlock();
		}
		this.listeners.clear();
		this.openingExecutor.shutdownNow();
		if (toClose != null) {
			destroy(toClose);
		}
		this.subscriptionExecutor.shutdownNow();
	}

	/**
	 * One daemon thread at most, started on demand and ended after {@link #IDLE_THREAD_KEEP_ALIVE}
	 * idle: an open subscription needs no thread of its own (DESIGN.md, RED-8). Its tasks may run
	 * out of the order queued when the thread ends as one is queued, which does not matter: an
	 * opening checks its generation under the lifecycle lock, and each container's subscription
	 * tasks are its own.
	 */
	private static ExecutorService daemonThread(String name) {
		ThreadPoolExecutor executor = new ThreadPoolExecutor(1, 1, IDLE_THREAD_KEEP_ALIVE.toMillis(),
				TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), (task) -> {
					Thread thread = new Thread(task, name);
					thread.setDaemon(true);
					return thread;
				});
		executor.allowCoreThreadTimeOut(true);
		return executor;
	}

	private static void destroy(RedisMessageListenerContainer listenerContainer) {
		try {
			listenerContainer.destroy();
		}
		catch (Exception ex) {
			logger.debug("Could not close the Redis release subscription", ex);
		}
	}

	/** Identity matters: the same functions may be subscribed twice. */
	private static final class Listener {

		private final Consumer<String> released;

		private final @Nullable Reservations reserved;

		Listener(Consumer<String> released, @Nullable Reservations reserved) {
			this.released = released;
			this.reserved = reserved;
		}

		Consumer<String> released() {
			return this.released;
		}

		@Nullable Reservations reserved() {
			return this.reserved;
		}

	}

	private final class Dispatcher implements MessageListener {

		@Override
		public void onMessage(Message message, byte @Nullable [] pattern) {
			// A reservation is "{<key>}<owner>" (keys contain no braces); a plain release, "{<key>}",
			// is published for waiting readers (RWL-24) and wakes every listener's waiter of the key.
			String body = new String(message.getBody(), StandardCharsets.UTF_8);
			int end = body.startsWith("{") ? body.indexOf('}') : -1;
			if (end <= 0) {
				logger.debug("Ignored a malformed message on the release channel: '" + body + "'");
				return;
			}
			String key = body.substring(1, end);
			String owner = body.substring(end + 1);
			for (Listener listener : RedisReleaseSubscription.this.listeners) {
				try {
					Reservations reserved = listener.reserved();
					if (reserved != null && !owner.isEmpty()) {
						reserved.reserved(key, owner);
					}
					else {
						listener.released().accept(key);
					}
				}
				catch (RuntimeException ex) {
					logger.warn("Release listener failed for lock '" + key + "'", ex);
				}
			}
		}

	}

}
