package dev.holdfast.faults;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;

/**
 * A holder of one permit of a semaphore in a permit fault run, as its own JVM: it takes a permit
 * through {@code LockTemplate.acquirePermit} on {@link FaultClient#backend} (renewal on, as by
 * default) and holds it until the stop file appears or it is killed. It logs, each line stamped
 * with {@link System#nanoTime()} (the host's monotonic clock) and flushed: {@code HELD token slotKey}
 * once it holds the permit, and {@code VALID token endNanos} for the permit and whenever a renewal
 * moves its end by more than 10 ms, read every 5 ms from the lease: the instant, on the monotonic
 * clock, after which this holder may no longer count the permit its own. Arguments
 * {@code key=value}: {@code backend}, {@code nodes} as for {@link FaultClient}, {@code semaphore},
 * {@code permits}, {@code leaseMs}, {@code log}, {@code stopFile}.
 */
public final class PermitHolderClient {

	/** How far the permit's end must move to count as a renewal. */
	private static final long RENEWED_NANOS = Duration.ofMillis(10).toNanos();

	private PermitHolderClient() {
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = FaultClient.parse(args);
		Path stopFile = Path.of(arguments.get("stopFile"));
		PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(arguments.get("log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
		FaultClient.Events events = new FaultClient.Events(out, ProcessHandle.current().pid());
		FaultClient.Backend backend = FaultClient.backend(arguments.get("backend"),
				Arrays.asList(arguments.get("nodes").split(",")));
		DefaultLockTemplate template = new DefaultLockTemplate(backend.backend(),
				LockSettings.defaults().withPollInterval(Duration.ofMillis(50)));
		LockOptions options = LockOptions.defaults()
			.leaseTime(Duration.ofMillis(Long.parseLong(arguments.get("leaseMs"))))
			.waitTime(Duration.ofSeconds(30));
		try (Lease permit = template.acquirePermit(arguments.get("semaphore"), null,
				Integer.parseInt(arguments.get("permits")), options)) {
			events.log("HELD " + permit.fencingToken() + " " + permit.key());
			long lastEnd = 0;
			while (!Files.exists(stopFile)) {
				long end = System.nanoTime()
						+ Duration.between(template.clock().instant(), permit.expiresAt()).toNanos();
				if (Math.abs(end - lastEnd) > RENEWED_NANOS) {
					lastEnd = end;
					events.log("VALID " + permit.fencingToken() + " " + end);
				}
				Thread.sleep(5);
			}
		}
		finally {
			template.close();
			backend.close();
			out.close();
		}
		System.exit(0);
	}

}
