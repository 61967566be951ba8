package dev.holdfast.redlock;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.DecoderException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.client.RedisClientConfig;
import org.redisson.client.RedisConnection;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.client.handler.CommandBatchEncoder;
import org.redisson.client.handler.CommandDecoder;
import org.redisson.client.handler.CommandEncoder;
import org.redisson.client.handler.CommandsQueue;
import org.redisson.client.handler.ConnectionWatchdog;
import org.redisson.client.handler.PingConnectionHandler;
import org.redisson.client.handler.RedisConnectionHandler;
import org.redisson.config.CredentialsResolver;
import org.redisson.misc.RedisURI;

/**
 * The script traffic of one connection to one node, once Redisson's client has opened it (TCP,
 * TLS, authentication, database, client name): plain RESP written straight into the channel's
 * buffer, and replies read in order into numbers, strings and lists, with no Redisson command
 * objects, promises or timers per request. Redisson's own encoder, decoder, command queue, ping
 * and reconnection handlers are taken off the connection; {@link NodeConnection} replaces a broken
 * connection itself.
 * <p>
 * Everything but {@link #isActive()} and {@link #close()} runs on the {@link RedlockIo} thread.
 * The scripts are loaded ({@code SCRIPT LOAD}) before any other request on the connection, so
 * that {@code EVALSHA} finds them; after a {@code NOSCRIPT} (a {@code SCRIPT FLUSH}) they are
 * loaded again, and the request is sent again as {@code EVAL} only when no later request was sent
 * before its reply (it would run after them), else it fails.
 */
final class NodeChannel extends ByteToMessageDecoder {

	/** Requests without an answer beyond which a node is failed at once instead of queued for. */
	static final int MAX_PENDING = 10_000;

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	private static final byte[] EVALSHA = bytes("EVALSHA");

	private static final byte[] AUTH = bytes("AUTH");

	private static final byte[] EVAL = bytes("EVAL");

	private static final byte[] PING = bytes("PING");

	private static final byte[] SCRIPT = bytes("SCRIPT");

	private static final byte[] LOAD = bytes("LOAD");

	private final NodeConnection owner;

	private final RedlockIo io;

	private final RedisConnection connection;

	private final Channel channel;

	private final ArrayDeque<Request> pending = new ArrayDeque<>();

	private @Nullable ChannelHandlerContext context;

	private @Nullable ByteBuf out;

	private volatile boolean active = true;

	// On the I/O thread: whether SCRIPT LOAD of the scripts has been sent and not yet answered.
	private boolean loading;

	// On the I/O thread: when the last reply was read (System.nanoTime()).
	private long lastReadAt = System.nanoTime();

	private NodeChannel(NodeConnection owner, RedlockIo io, RedisConnection connection) {
		this.owner = owner;
		this.io = io;
		this.connection = connection;
		this.channel = connection.getChannel();
	}

	/**
	 * Takes over a connection that Redisson opened: its handlers give way to this one, the scripts
	 * are loaded, and the future completes with the channel ready for requests.
	 */
	static CompletableFuture<NodeChannel> install(RedisConnection connection, NodeConnection owner, RedlockIo io) {
		CompletableFuture<NodeChannel> installed = new CompletableFuture<>();
		Channel channel = connection.getChannel();
		try {
			channel.eventLoop().execute(() -> {
				try {
					ChannelPipeline pipeline = channel.pipeline();
					// RedisConnectionHandler renews credentials (CredentialsResolver.nextRenewal) by
					// sending AUTH as a Redisson command, which nothing here can encode any more: it
					// would close the connection at every renewal. Once removed it stops renewing
					// quietly, and renewCredentials() sends AUTH in order with the other requests.
					for (Class<? extends ChannelHandler> type : List.of(RedisConnectionHandler.class,
							PingConnectionHandler.class, ConnectionWatchdog.class, CommandEncoder.class,
							CommandBatchEncoder.class, CommandsQueue.class, CommandDecoder.class)) {
						if (pipeline.get(type) != null) {
							pipeline.remove(type);
						}
					}
					NodeChannel handler = new NodeChannel(owner, io, connection);
					pipeline.addLast("holdfast-redlock", handler);
					if (!channel.isActive()) {
						handler.active = false;
						throw new RedisConnectionException("Connection to " + owner.address() + " closed while opening");
					}
					io.opened(handler);
					handler.loadScripts();
					handler.renewCredentials();
					installed.complete(handler);
				}
				catch (RuntimeException ex) {
					connection.closeAsync();
					installed.completeExceptionally(ex);
				}
			});
		}
		catch (RuntimeException ex) {
			connection.closeAsync();
			installed.completeExceptionally(ex);
		}
		return installed;
	}

	/** The handler names of the connection's pipeline. */
	List<String> handlerNames() {
		return this.channel.pipeline().names();
	}

	/** Whether requests can still be written: the connection is open. */
	boolean isActive() {
		return this.active;
	}

	/** Closes the connection; what is pending fails. */
	void close() {
		this.connection.closeAsync();
	}

	/** Sends {@code EVALSHA} of the script, and its text if the node does not know it. */
	Request eval(RedlockScripts.Script<?> script, Object[] params) {
		Object[] args = new Object[params.length + 1];
		args[0] = script.sha();
		System.arraycopy(params, 0, args, 1, params.length);
		Request request = new Request(this, EVALSHA, script, args, new CompletableFuture<>());
		this.io.send(request);
		return request;
	}

	Request ping() {
		Request request = new Request(this, PING, null, new Object[0], new CompletableFuture<>());
		this.io.send(request);
		return request;
	}

	@Override
	public void handlerAdded(ChannelHandlerContext ctx) {
		this.context = ctx;
	}

	/**
	 * Waits for the next renewal of the client's credentials ({@link CredentialsResolver#nextRenewal()},
	 * e.g. Entra ID tokens), then sends {@code AUTH} with the renewed credentials as an ordinary
	 * pipelined request, and waits for the next one. Credentials are taken as Redisson takes them:
	 * those of the address first, then the resolver's, then the configuration's. A refused or
	 * unanswered {@code AUTH}, or a resolver that fails, closes the connection: the next one is
	 * opened (and authenticated) by Redisson anew.
	 */
	private void renewCredentials() {
		RedisClientConfig config = this.connection.getRedisClient().getConfig();
		CredentialsResolver resolver = config.getCredentialsResolver();
		if (resolver == null) {
			return;
		}
		resolver.nextRenewal().whenComplete((renewed, renewalFailed) -> {
			if (!this.active) {
				return;
			}
			if (renewalFailed != null) {
				logger.warn("Redlock: the credentials renewal of " + this.owner.address()
						+ " failed; the connection keeps its credentials", renewalFailed);
				return;
			}
			InetSocketAddress address = this.connection.getRedisClient().resolveAddr().getNow(null);
			resolver.resolve(address).whenComplete((credentials, resolveFailed) -> {
				if (!this.active) {
					return;
				}
				if (resolveFailed != null) {
					renewalFailed("could not resolve the renewed credentials", resolveFailed);
					return;
				}
				RedisURI uri = config.getAddress();
				String password = Objects.toString(uri.getPassword(),
						Objects.toString((credentials != null) ? credentials.getPassword() : null, config.getPassword()));
				if (password == null) {
					renewCredentials();
					return;
				}
				String username = Objects.toString(uri.getUsername(),
						Objects.toString((credentials != null) ? credentials.getUsername() : null, config.getUsername()));
				Object[] args = (username != null) ? new Object[] { username, password } : new Object[] { password };
				Request auth = new Request(this, AUTH, null, args, new CompletableFuture<>());
				this.io.send(auth);
				auth.result.whenComplete((ok, refused) -> {
					if (refused != null) {
						renewalFailed("AUTH with the renewed credentials failed", refused);
					}
					else {
						renewCredentials();
					}
				});
			});
		});
	}

	private void renewalFailed(String what, Throwable cause) {
		logger.warn("Redlock connection to " + this.owner.address() + ": " + what
				+ "; closing it, the next request opens a new one", cause);
		close();
	}

	// Loads all scripts; once more after a NOSCRIPT only when no reload is on its way already.
	private void loadScripts() {
		long now = System.nanoTime();
		Request last = null;
		for (RedlockScripts.Script<?> script : RedlockScripts.ALL) {
			last = new Request(this, SCRIPT, null, new Object[] { LOAD, script.text() }, new CompletableFuture<>());
			encode(last, now);
		}
		flush();
		this.loading = true;
		last.result.whenComplete((loaded, error) -> this.loading = false);
	}

	/**
	 * On the I/O thread: the node does not know the script of {@code request} (its scripts were
	 * flushed). The request is sent again as {@code EVAL} only when nothing was sent after it:
	 * otherwise a later request (say the release of this acquire, whose script the node knows)
	 * would have run before it. Else it fails, and is not applied: a failed node request is
	 * already handled by the round that made it. Either way the scripts are loaded again, so
	 * that the requests after it find them.
	 */
	private void noScript(Request request, RedlockScripts.Script<?> script) {
		if (this.pending.isEmpty() && this.out == null) {
			Object[] args = request.args.clone();
			args[0] = script.text();
			encode(new Request(this, EVAL, null, args, request.result), System.nanoTime());
		}
		else {
			request.fail(new RedisException("NOSCRIPT from " + this.owner.address()
					+ " with later requests already sent: not sent again, so as not to run after them"));
		}
		if (!this.loading) {
			loadScripts();
		}
		flush();
	}

	/**
	 * On the I/O thread: appends the request to what the next {@link #flush()} writes, or fails it
	 * when the connection is closed or the node has too many requests unanswered.
	 * @return whether this is the first request since the last flush
	 */
	boolean encode(Request request, long now) {
		if (!this.active || this.context == null) {
			request.fail(new RedisConnectionException("Connection to " + this.owner.address() + " is closed"));
			return false;
		}
		if (this.pending.size() >= MAX_PENDING) {
			request.fail(new RedisTimeoutException(MAX_PENDING + " requests to " + this.owner.address()
					+ " have not been answered"));
			return false;
		}
		ByteBuf buffer = this.out;
		boolean first = buffer == null;
		if (buffer == null) {
			buffer = this.context.alloc().ioBuffer(512);
			this.out = buffer;
		}
		Resp.write(buffer, request.command, request.args);
		request.sentAt = now;
		this.pending.add(request);
		this.io.awaitingReplies();
		return first;
	}

	/** On the I/O thread: writes and flushes what {@link #encode} appended. */
	void flush() {
		ByteBuf buffer = this.out;
		this.out = null;
		if (buffer != null && this.context != null) {
			this.context.writeAndFlush(buffer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
		}
	}

	/**
	 * On the I/O thread: fails the requests sent more than a node timeout before {@code now} that
	 * have no answer yet; they stay queued, so that their late replies are matched and dropped.
	 * Closes the connection when its oldest unanswered request is older than
	 * {@link #silentNanos(long)} and nothing was read since it was sent: a peer, proxy or middlebox
	 * that stopped answering without closing the connection (no FIN or RST) would otherwise keep
	 * the node lost until the kernel gives up, which can be never. The pending requests then fail
	 * and the next request opens a new connection.
	 * @return whether requests are still waiting for replies
	 */
	boolean expire(long now) {
		long timeout = this.io.timeoutNanos();
		Request oldest = this.pending.peek();
		if (oldest != null && now - oldest.sentAt > silentNanos(timeout) && this.lastReadAt - oldest.sentAt < 0
				&& this.context != null) {
			this.owner.silent((now - oldest.sentAt) / 1_000_000);
			this.context.close();
			return false;
		}
		long sentBefore = now - timeout;
		Iterator<Request> requests = this.pending.iterator();
		while (requests.hasNext()) {
			Request request = requests.next();
			if (request.sentAt - sentBefore > 0) {
				break;
			}
			if (!request.result.isDone()) {
				request.fail(new RedisTimeoutException("No answer from " + this.owner.address() + " within "
						+ (this.io.timeoutNanos() / 1_000_000) + " ms"));
			}
		}
		return !this.pending.isEmpty();
	}

	/**
	 * How long a connection may leave its oldest request unanswered, with nothing read, before it
	 * is closed as silent: three node timeouts, at least one second (a node that is only slow, or
	 * a GC pause of ours, should not cost a reconnect).
	 */
	static long silentNanos(long timeoutNanos) {
		return Math.max(3 * timeoutNanos, 1_000_000_000L);
	}

	@Override
	protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
		this.lastReadAt = System.nanoTime();
		while (in.isReadable()) {
			int start = in.readerIndex();
			Object reply = Resp.parse(in);
			if (reply == Resp.INCOMPLETE) {
				in.readerIndex(start);
				return;
			}
			if (reply == Resp.PUSH) {
				continue;
			}
			Request request = this.pending.poll();
			if (request == null) {
				throw new DecoderException("A reply from " + this.owner.address() + " that no request asked for");
			}
			this.owner.answered();
			if (reply instanceof Resp.ErrorReply error) {
				RedlockScripts.Script<?> script = request.script;
				if (script != null && request.command == EVALSHA && error.message().startsWith("NOSCRIPT")) {
					noScript(request, script);
				}
				else {
					request.fail(new RedisException(error.message()));
				}
			}
			else {
				request.result.complete(reply);
			}
		}
	}

	@Override
	public void channelInactive(ChannelHandlerContext ctx) throws Exception {
		this.active = false;
		try {
			super.channelInactive(ctx);
		}
		finally {
			this.io.closed(this);
			ByteBuf buffer = this.out;
			this.out = null;
			if (buffer != null) {
				buffer.release();
			}
			RedisConnectionException closed = new RedisConnectionException(
					"Connection to " + this.owner.address() + " closed");
			Request request;
			while ((request = this.pending.poll()) != null) {
				request.fail(closed);
			}
		}
	}

	@Override
	public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
		this.owner.failed(cause);
		ctx.close();
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	/** One command to the node and the future of its reply. */
	static final class Request {

		private final NodeChannel channel;

		private final byte[] command;

		private final RedlockScripts.@Nullable Script<?> script;

		private final Object[] args;

		final CompletableFuture<@Nullable Object> result;

		// Written and read on the I/O thread only.
		long sentAt;

		Request(NodeChannel channel, byte[] command, RedlockScripts.@Nullable Script<?> script, Object[] args,
				CompletableFuture<@Nullable Object> result) {
			this.channel = channel;
			this.command = command;
			this.script = script;
			this.args = args;
			this.result = result;
		}

		NodeChannel channel() {
			return this.channel;
		}

		void fail(Throwable error) {
			if (error instanceof RedisTimeoutException) {
				this.channel.owner.markUnresponsive();
			}
			this.result.completeExceptionally(error);
		}

	}

}
