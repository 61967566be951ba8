package dev.holdfast.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The floor of a client on five nodes ({@code redlock-floor}): what the wire alone costs. Each
 * calling thread has its own blocking socket to every node and does the single-node floor's work
 * on all five at once from its own thread: {@code SET key owner NX PX} written to the five
 * sockets, the five replies read, then a compare-and-delete {@code EVALSHA} the same way. No
 * I/O thread, no wake-ups, no quorum logic, no fencing, no timeouts: ten writes and ten reads per
 * pair, which no Redlock client on five sockets can go below.
 */
final class RedlockFloorClients {

	private static final String COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then "
			+ "return redis.call('del', KEYS[1]) else return 0 end";

	private RedlockFloorClients() {
	}

	static LockClient create(List<Integer> ports) {
		ConcurrentLinkedQueue<Node[]> all = new ConcurrentLinkedQueue<>();
		ThreadLocal<Node[]> perThread = ThreadLocal.withInitial(() -> {
			Node[] nodes = new Node[ports.size()];
			for (int i = 0; i < nodes.length; i++) {
				nodes[i] = new Node(ports.get(i));
			}
			all.add(nodes);
			return nodes;
		});
		byte[] sha = perThread.get()[0].scriptLoad();
		for (Node node : perThread.get()) {
			node.scriptLoad();
		}
		byte[] px = Long.toString(Clients.LEASE.toMillis()).getBytes(StandardCharsets.US_ASCII);
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				Node[] nodes = perThread.get();
				byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
				byte[] owner = Clients.owner().getBytes(StandardCharsets.UTF_8);
				for (Node node : nodes) {
					node.send(bytes("SET"), keyBytes, owner, bytes("NX"), bytes("PX"), px);
				}
				int granted = 0;
				for (Node node : nodes) {
					if (node.readLine().equals("+OK")) {
						granted++;
					}
				}
				if (granted < nodes.length) {
					throw new IllegalStateException("floor did not acquire " + key + " on every node");
				}
				for (Node node : nodes) {
					node.send(bytes("EVALSHA"), sha, bytes("1"), keyBytes, owner);
				}
				for (Node node : nodes) {
					node.readLine();
				}
			}

			@Override
			public void close() {
				for (Node[] nodes : all) {
					for (Node node : nodes) {
						node.close();
					}
				}
			}

		};
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.US_ASCII);
	}

	/** One blocking connection, RESP by hand: only the simple replies the floor reads. */
	private static final class Node {

		private final SocketChannel channel;

		private final ByteBuffer out = ByteBuffer.allocateDirect(4096);

		private final ByteBuffer in = ByteBuffer.allocateDirect(4096);

		private final byte[] line = new byte[256];

		Node(int port) {
			try {
				this.channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
				this.channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
				this.in.flip();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		byte[] scriptLoad() {
			send(bytes("SCRIPT"), bytes("LOAD"), bytes(COMPARE_AND_DELETE));
			String header = readLine();
			String sha = readLine();
			if (!header.startsWith("$")) {
				throw new IllegalStateException("SCRIPT LOAD answered " + header);
			}
			return bytes(sha);
		}

		void send(byte[]... args) {
			this.out.clear();
			this.out.put((byte) '*').put(bytes(Integer.toString(args.length))).put((byte) '\r').put((byte) '\n');
			for (byte[] arg : args) {
				this.out.put((byte) '$').put(bytes(Integer.toString(arg.length))).put((byte) '\r').put((byte) '\n');
				this.out.put(arg).put((byte) '\r').put((byte) '\n');
			}
			this.out.flip();
			try {
				while (this.out.hasRemaining()) {
					this.channel.write(this.out);
				}
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		// One line without its CRLF.
		String readLine() {
			int length = 0;
			try {
				while (true) {
					if (!this.in.hasRemaining()) {
						this.in.clear();
						if (this.channel.read(this.in) < 0) {
							throw new IOException("closed");
						}
						this.in.flip();
						continue;
					}
					byte b = this.in.get();
					if (b == '\n') {
						return new String(this.line, 0, length - 1, StandardCharsets.US_ASCII);
					}
					this.line[length++] = b;
				}
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
		}

		void close() {
			try {
				this.channel.close();
			}
			catch (IOException ex) {
				// closing
			}
		}

	}

}
