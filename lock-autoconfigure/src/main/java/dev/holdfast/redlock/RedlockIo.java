package dev.holdfast.redlock;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.resolver.AddressResolverGroup;
import io.netty.resolver.dns.DnsAddressResolverGroup;
import io.netty.resolver.dns.DnsServerAddressStreamProviders;
import org.jspecify.annotations.Nullable;

/**
 * The one I/O thread of a Redlock backend, which carries the scripts of every node: requests are
 * queued by the callers' threads, and the I/O thread writes all that is queued at once, one write
 * and one flush per node, however many rounds are queued (the five requests of one round, and
 * those of concurrent rounds). Callers wake the I/O thread only when no write is already due.
 * Replies of all nodes are read on the same thread, so a round is decided without handing work
 * between I/O threads. Also fails the requests that have had no answer within the node timeout.
 */
final class RedlockIo implements AutoCloseable {

	private final EventLoopGroup group;

	private final EventLoop loop;

	private final long timeoutNanos;

	private final long sweepNanos;

	private final Queue<NodeChannel.Request> queue = new ConcurrentLinkedQueue<>();

	private final AtomicBoolean drainDue = new AtomicBoolean();

	private final Runnable drain = this::drain;

	private final Runnable sweep = this::sweep;

	// Confined to the I/O thread.
	private final List<NodeChannel> written = new ArrayList<>();

	// Confined to the I/O thread: the open channels, for the timeout sweep.
	private final List<NodeChannel> channels = new ArrayList<>();

	private boolean sweepScheduled;

	private @Nullable DnsAddressResolverGroup resolver;

	RedlockIo(long timeoutMillis) {
		AtomicInteger count = new AtomicInteger();
		ThreadFactory threads = (runnable) -> {
			Thread thread = new Thread(runnable, "holdfast-redlock-wire-" + count.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
		this.group = new MultiThreadIoEventLoopGroup(1, threads, NioIoHandler.newFactory());
		this.loop = this.group.next();
		this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeoutMillis));
		this.sweepNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(1), this.timeoutNanos / 4);
	}

	EventLoopGroup group() {
		return this.group;
	}

	EventLoop loop() {
		return this.loop;
	}

	/** A DNS resolver for this I/O thread's transport, made on first use and closed with it. */
	synchronized AddressResolverGroup<java.net.InetSocketAddress> resolver() {
		if (this.resolver == null) {
			this.resolver = new DnsAddressResolverGroup(NioDatagramChannel.class,
					DnsServerAddressStreamProviders.platformDefault());
		}
		return this.resolver;
	}

	long timeoutNanos() {
		return this.timeoutNanos;
	}

	/** Queues a request; it is written with everything else queued when the I/O thread next runs. */
	void send(NodeChannel.Request request) {
		this.queue.add(request);
		if (!this.drainDue.get() && this.drainDue.compareAndSet(false, true)) {
			try {
				this.loop.execute(this.drain);
			}
			catch (RuntimeException ex) {
				// Shut down: nothing will write it.
				this.drainDue.set(false);
				NodeChannel.Request queued;
				while ((queued = this.queue.poll()) != null) {
					queued.fail(new org.redisson.client.RedisConnectionException("Redlock backend closed"));
				}
			}
		}
	}

	private void drain() {
		this.drainDue.set(false);
		long now = System.nanoTime();
		NodeChannel.Request request;
		while ((request = this.queue.poll()) != null) {
			NodeChannel channel = request.channel();
			if (channel.encode(request, now)) {
				this.written.add(channel);
			}
		}
		for (int i = 0; i < this.written.size(); i++) {
			this.written.get(i).flush();
		}
		this.written.clear();
	}

	/** On the I/O thread: a channel that can carry requests now, swept for timeouts until it closes. */
	void opened(NodeChannel channel) {
		this.channels.add(channel);
	}

	/** On the I/O thread. */
	void closed(NodeChannel channel) {
		this.channels.remove(channel);
	}

	/** On the I/O thread: a request was written; makes sure that the timeout sweep runs. */
	void awaitingReplies() {
		if (!this.sweepScheduled) {
			this.sweepScheduled = true;
			this.loop.schedule(this.sweep, this.sweepNanos, TimeUnit.NANOSECONDS);
		}
	}

	private void sweep() {
		long now = System.nanoTime();
		boolean pending = false;
		// expire may close a channel, which leaves this list (at once, or later on this thread).
		for (NodeChannel channel : List.copyOf(this.channels)) {
			pending |= channel.expire(now);
		}
		if (pending) {
			this.loop.schedule(this.sweep, this.sweepNanos, TimeUnit.NANOSECONDS);
		}
		else {
			this.sweepScheduled = false;
		}
	}

	@Override
	public void close() {
		synchronized (this) {
			if (this.resolver != null) {
				this.resolver.close();
			}
		}
		this.group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
	}

}
