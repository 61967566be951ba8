package dev.holdfast.sample.demo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A reduced run of the demo: three real instances of the sample in their own JVMs, sharing one
 * H2 file database, under concurrent load and for a few ticks of the scheduled job.
 */
class DemoTests {

	@Test
	@Timeout(600)
	void threeInstancesNeverOversellAndRunEachTickOnce() {
		ByteArrayOutputStream buffer = new ByteArrayOutputStream();
		PrintStream out = new PrintStream(new TeeOutputStream(buffer, System.out), true, StandardCharsets.UTF_8);
		int status = Demo.run(out, "--instances=3", "--requests=200", "--concurrency=8", "--stock=60", "--ticks=3",
				"--work-dir=target/demo-test");
		String report = buffer.toString(StandardCharsets.UTF_8);
		assertThat(report).contains("RESULT: every guarantee held")
			.containsPattern("requests +200 ")
			.containsPattern("oversold +0 ")
			.containsPattern("runs per tick +1 each")
			.contains("Stopped 3 instances");
		// 200 requests for 2 SKUs of 60 units: everything is sold, the rest is turned away
		assertThat(report).containsPattern("apple +60 recorded, stock 60 -> 0")
			.containsPattern("pear +60 recorded, stock 60 -> 0");
		assertThat(status).isZero();
	}

	@Test
	void badOptionsExitWithUsage() {
		ByteArrayOutputStream buffer = new ByteArrayOutputStream();
		int status = Demo.run(new PrintStream(buffer, true, StandardCharsets.UTF_8), "--instances=zero");
		assertThat(status).isEqualTo(2);
		assertThat(buffer.toString(StandardCharsets.UTF_8))
			.contains("--instances must be a whole number from 1 to 9, was 'zero'")
			.contains("Usage: Demo");
	}

	private static final class TeeOutputStream extends java.io.OutputStream {

		private final java.io.OutputStream first;

		private final java.io.OutputStream second;

		TeeOutputStream(java.io.OutputStream first, java.io.OutputStream second) {
			this.first = first;
			this.second = second;
		}

		@Override
		public void write(int b) throws java.io.IOException {
			this.first.write(b);
			this.second.write(b);
		}

		@Override
		public void write(byte[] b, int off, int len) throws java.io.IOException {
			this.first.write(b, off, len);
			this.second.write(b, off, len);
		}

		@Override
		public void flush() throws java.io.IOException {
			this.first.flush();
			this.second.flush();
		}

	}

}
