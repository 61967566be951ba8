package dev.holdfast.faults;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import dev.holdfast.Lease;
import dev.holdfast.LockMode;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;

/**
 * A client of a read-write fault run, as its own JVM: one template (as an application instance
 * has), {@code readers} reader threads ({@code mode(READ)}) and {@code writers} writer threads on
 * the same lock, looping until the stop file appears. A writer reads the {@link ReadWriteResource}
 * with its token, works {@code workMs}, and writes the value plus one with its token (a fenced
 * read-modify-write); a reader reads it with its read lease's token and holds {@code readMs}.
 * <p>
 * Each line is {@code <nanoTime> <pid> <TYPE> <thread> ...}, flushed: {@code WACQ t token} and
 * {@code RACQ t token endNanos} once granted (end: the lease's validity end on the monotonic
 * clock); {@code WR t token value result validity}, {@code RD t token value writerToken result
 * validity}; {@code WREL}/{@code RREL t token validity} before the release is sent. Validity is
 * {@code valid} when {@link Lease#isValid()} held after the line's stamp was taken, so the hold
 * was valid from its grant up to that stamp; else {@code lost}. Arguments {@code key=value}:
 * {@code backend}, {@code nodes} as for {@link FaultClient}, {@code resource} (the resource's
 * {@code redis://...}), {@code lock}, {@code leaseMs}, {@code readers}, {@code writers},
 * {@code workMs}, {@code readMs}, {@code stopFile}, {@code log}.
 */
public final class ReadWriteFaultClient {

	private final DefaultLockTemplate template;

	private final ReadWriteResource resource;

	private final FaultClient.Events events;

	private final String lock;

	private final Duration lease;

	private final long workMs;

	private final long readMs;

	private final Path stopFile;

	private ReadWriteFaultClient(DefaultLockTemplate template, ReadWriteResource resource, FaultClient.Events events,
			Map<String, String> arguments) {
		this.template = template;
		this.resource = resource;
		this.events = events;
		this.lock = arguments.get("lock");
		this.lease = Duration.ofMillis(Long.parseLong(arguments.get("leaseMs")));
		this.workMs = Long.parseLong(arguments.get("workMs"));
		this.readMs = Long.parseLong(arguments.get("readMs"));
		this.stopFile = Path.of(arguments.get("stopFile"));
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = FaultClient.parse(args);
		FaultClient.Backend backend = FaultClient.backend(arguments.get("backend"),
				Arrays.asList(arguments.get("nodes").split(",")));
		try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(arguments.get("log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
				ReadWriteResource resource = ReadWriteResource.connect(arguments.get("resource"));
				DefaultLockTemplate template = new DefaultLockTemplate(backend.backend(),
						LockSettings.defaults().withPollInterval(Duration.ofMillis(50)))) {
			FaultClient.Events events = new FaultClient.Events(out, ProcessHandle.current().pid());
			ReadWriteFaultClient client = new ReadWriteFaultClient(template, resource, events, arguments);
			List<Thread> threads = new ArrayList<>();
			for (int i = 0; i < Integer.parseInt(arguments.get("writers")); i++) {
				threads.add(new Thread(() -> client.loop(false), "w" + i));
			}
			for (int i = 0; i < Integer.parseInt(arguments.get("readers")); i++) {
				threads.add(new Thread(() -> client.loop(true), "r" + i));
			}
			events.log("START " + arguments.get("backend"));
			threads.forEach(Thread::start);
			for (Thread thread : threads) {
				thread.join();
			}
			events.log("STOP");
		}
		finally {
			backend.close();
		}
		// Lettuce and Redisson leave non-daemon threads behind; the log is closed, so leave now.
		System.exit(0);
	}

	private void loop(boolean reader) {
		LockOptions options = LockOptions.defaults()
			.leaseTime(this.lease)
			.waitTime(Duration.ofSeconds(5))
			.mode(reader ? LockMode.READ : LockMode.WRITE);
		String thread = Thread.currentThread().getName();
		while (!Files.exists(this.stopFile) && !Thread.currentThread().isInterrupted()) {
			try {
				try (Lease lease = this.template.acquire(this.lock, null, options)) {
					if (reader) {
						read(thread, lease);
					}
					else {
						write(thread, lease);
					}
				}
				Thread.sleep(ThreadLocalRandom.current().nextLong(1, 20));
			}
			catch (LockNotAcquiredException ex) {
				this.events.log("TIMEOUT " + thread);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
			catch (RuntimeException ex) {
				// Logged after the lease was closed: it ends no hold interval (the last valid stamp does).
				this.events.log("ERR " + thread + " " + ex.getClass().getSimpleName() + ": "
						+ String.valueOf(ex.getMessage()).replace('\n', ' '));
				sleep(50);
			}
		}
	}

	private void read(String thread, Lease lease) {
		long token = lease.fencingToken();
		long end = System.nanoTime() + Duration.between(this.template.clock().instant(), lease.expiresAt()).toNanos();
		this.events.log("RACQ " + thread + " " + token + " " + end);
		ReadWriteResource.Read read = this.resource.read(token, true);
		stamped(lease, "RD " + thread + " " + token + " " + read.value() + " " + read.writerToken() + " "
				+ read.result());
		sleep(this.readMs);
		stamped(lease, "RREL " + thread + " " + token);
	}

	private void write(String thread, Lease lease) {
		long token = lease.fencingToken();
		this.events.log("WACQ " + thread + " " + token);
		ReadWriteResource.Read read = this.resource.read(token, false);
		if (!read.accepted()) {
			stamped(lease, "WR " + thread + " " + token + " - rejected");
		}
		else {
			sleep(this.workMs);
			long value = read.value() + 1;
			stamped(lease, "WR " + thread + " " + token + " " + value + " " + this.resource.write(token, value));
		}
		stamped(lease, "WREL " + thread + " " + token);
	}

	/** Logs {@code event} stamped before the validity is read, with {@code valid} or {@code lost}. */
	private void stamped(Lease lease, String event) {
		long at = System.nanoTime();
		this.events.log(at, event + " " + (lease.isValid() ? "valid" : "lost"));
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

}
