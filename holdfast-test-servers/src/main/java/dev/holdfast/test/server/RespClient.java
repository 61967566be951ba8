package dev.holdfast.test.server;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The few bytes of the Redis protocol (RESP) that {@link RedisServer} speaks to its server: one
 * command on a new connection, and {@code PING}.
 */
final class RespClient {

	private RespClient() {
	}

	/**
	 * Sends one command on a new connection to {@code 127.0.0.1:<port>} and returns the reply, as
	 * {@link RedisServer#command} describes it.
	 */
	static @Nullable Object send(int port, List<String> command) throws IOException {
		ByteArrayOutputStream request = new ByteArrayOutputStream();
		request.writeBytes(("*" + command.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
		for (String argument : command) {
			byte[] bytes = argument.getBytes(StandardCharsets.UTF_8);
			request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
			request.writeBytes(bytes);
			request.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
		}
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
			socket.setSoTimeout(2000);
			socket.getOutputStream().write(request.toByteArray());
			socket.getOutputStream().flush();
			return readReply(new BufferedInputStream(socket.getInputStream()), command.get(0));
		}
	}

	private static @Nullable Object readReply(InputStream in, String command) throws IOException {
		int type = in.read();
		String line = readLine(in);
		switch (type) {
			case '+':
				return line;
			case '-':
				throw new IllegalStateException("Redis answered " + command + " with " + line);
			case ':':
				return Long.parseLong(line);
			case '$': {
				int length = Integer.parseInt(line);
				if (length < 0) {
					return null;
				}
				byte[] body = in.readNBytes(length + 2);
				return new String(body, 0, length, StandardCharsets.UTF_8);
			}
			case '*': {
				int count = Integer.parseInt(line);
				if (count < 0) {
					return null;
				}
				List<@Nullable Object> items = new ArrayList<>(count);
				for (int i = 0; i < count; i++) {
					items.add(readReply(in, command));
				}
				return items;
			}
			default:
				throw new IOException("Unexpected reply to " + command + ": " + (char) type + line);
		}
	}

	private static String readLine(InputStream in) throws IOException {
		StringBuilder line = new StringBuilder();
		int c;
		while ((c = in.read()) != '\n') {
			if (c == -1) {
				throw new IOException("Connection closed");
			}
			if (c != '\r') {
				line.append((char) c);
			}
		}
		return line.toString();
	}

	/** Whether the server on {@code port} answers {@code PING} with {@code PONG} within 500 ms. */
	static boolean ping(int port) {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
			socket.setSoTimeout(500);
			OutputStream out = socket.getOutputStream();
			out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			byte[] buffer = new byte[16];
			int read = in.read(buffer);
			return read > 0 && new String(buffer, 0, read, StandardCharsets.US_ASCII).startsWith("+PONG");
		}
		catch (IOException ex) {
			return false;
		}
	}

}
