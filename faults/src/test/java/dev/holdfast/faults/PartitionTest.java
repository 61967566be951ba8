package dev.holdfast.faults;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A {@link Partition} is silent: established connections hang (no reset, no end of stream), new
 * ones time out, and once it is removed the connection carries on with what was sent meanwhile.
 * A client partition cuts only the processes of one group.
 */
@Tag("smoke")
@Timeout(60)
class PartitionTest {

	@TempDir
	Path dir;

	@BeforeEach
	void needsIptables() {
		assumeTrue(Partition.unavailable().isEmpty(), () -> Partition.unavailable().orElseThrow());
	}

	@Test
	void portPartitionHangsConnectionsUntilItIsRemoved() throws Exception {
		try (RedisNode node = RedisNode.start(this.dir, false); Socket socket = connect(node)) {
			assertThat(ping(socket)).isEqualTo("+PONG");
			try (Partition partition = Partition.ports(port(node))) {
				assertThatExceptionOfType(SocketTimeoutException.class).isThrownBy(() -> ping(socket));
				assertThatExceptionOfType(SocketTimeoutException.class).isThrownBy(() -> connect(node));
			}
			// The PING sent during the partition is retransmitted and answered.
			socket.setSoTimeout(15_000);
			assertThat(readLine(socket.getInputStream())).isEqualTo("+PONG");
			assertThat(ping(socket)).isEqualTo("+PONG");
		}
		assertThat(rules()).doesNotContain(Partition.COMMENT);
	}

	@Test
	void clientPartitionCutsOnlyProcessesOfThatGroup() throws Exception {
		int group = FaultContext.clientGroup(7);
		try (RedisNode node = RedisNode.start(this.dir, false); Socket socket = connect(node)) {
			assertThat(pingAs(group, node)).isEqualTo("+PONG");
			try (Partition partition = Partition.client(group, port(node))) {
				assertThat(rules()).contains(Partition.COMMENT);
				assertThat(pingAs(group, node)).as("ping from the cut-off group").isEmpty();
				assertThat(ping(socket)).as("ping from this JVM, another group").isEqualTo("+PONG");
			}
			assertThat(pingAs(group, node)).isEqualTo("+PONG");
		}
		assertThat(rules()).doesNotContain(Partition.COMMENT);
	}

	private static Socket connect(RedisNode node) throws IOException {
		Socket socket = new Socket();
		socket.connect(new InetSocketAddress("127.0.0.1", port(node)), 1000);
		socket.setSoTimeout(1000);
		return socket;
	}

	private static String ping(Socket socket) throws IOException {
		socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
		socket.getOutputStream().flush();
		return readLine(socket.getInputStream());
	}

	private static String readLine(InputStream in) throws IOException {
		StringBuilder line = new StringBuilder();
		int c;
		while ((c = in.read()) != '\n') {
			if (c == -1) {
				throw new IOException("connection closed");
			}
			if (c != '\r') {
				line.append((char) c);
			}
		}
		return line.toString();
	}

	/** PING from a new process with group id {@code group}; empty when no answer within 2 s. */
	private static String pingAs(int group, RedisNode node) throws Exception {
		String script = "exec 3<>/dev/tcp/127.0.0.1/" + port(node) + " && printf 'PING\\r\\n' >&3 && "
				+ "read -r line <&3 && printf '%s' \"${line%$'\\r'}\"";
		Process process = new ProcessBuilder("setpriv", "--regid", Integer.toString(group), "--clear-groups", "--",
				"timeout", "2", "bash", "-c", script)
			.redirectErrorStream(true)
			.start();
		Processes.register(process);
		String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
		assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
		return output.strip();
	}

	private static String rules() throws Exception {
		Process process = new ProcessBuilder("iptables", "-w", "5", "-S").redirectErrorStream(true).start();
		return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
	}

	private static int port(RedisNode node) {
		return URI.create(node.uri()).getPort();
	}

}
