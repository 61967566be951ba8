package dev.holdfast.faults;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A wall clock that the controller moves, at run time, for the processes it starts with
 * {@link #environment()}: libfaketime ({@code apt-get install faketime}) preloaded into them,
 * reading its offset from a file that {@link #jump(Duration)} rewrites.
 * <p>
 * Only the wall clock moves ({@code CLOCK_REALTIME}: {@link System#currentTimeMillis()},
 * {@code Instant.now()}, {@code gettimeofday}, {@code time}): {@code CLOCK_MONOTONIC}, hence
 * {@link System#nanoTime()} and the event logs' stamps, stays the host's shared clock
 * ({@code FAKETIME_DONT_FAKE_MONOTONIC=1}, without which a JVM hangs). The offset file is read on
 * every clock call ({@code FAKETIME_NO_CACHE=1}), so a jump is seen at once. A cache is not an
 * option: libfaketime refreshes it by the faked clock, so after a backward jump it would keep
 * the old offset for as long as the jump. The price is about 0.1 ms per wall-clock call.
 * <p>
 * Timed waits keep their length ({@code FAKETIME_FORCE_MONOTONIC_FIX=0}): libfaketime 0.9.10
 * turns this "fix" on by itself for recent glibc versions, and with it a JVM's
 * {@code LockSupport.parkNanos(100 ms)} returns at once and its {@code Object.wait} is cut short
 * or drawn out, so that a Netty-based client spins and never connects.
 * <p>
 * glibc's own allocator is preloaded too when the system has it ({@code libc_malloc_debug}, a
 * plain glibc {@code malloc} unless {@code MALLOC_CHECK_} is set): a program linked with a shared
 * jemalloc, such as Debian's {@code redis-server}, otherwise dies at startup, because jemalloc
 * reads the clock while libfaketime initializes ("Unexpected recursive calls to
 * clock_gettime()"). A JVM allocates with glibc's {@code malloc} anyway.
 * <p>
 * libfaketime keeps a semaphore and a shared-memory segment per process in {@code /dev/shm},
 * removed when the process exits normally; {@link #watch(Process)} removes them for a process
 * that is killed.
 */
public final class FakeClock {

	private static final List<Path> LIBRARIES = List.of(
			Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
			Path.of("/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"),
			Path.of("/usr/local/lib/faketime/libfaketimeMT.so.1"), Path.of("/usr/lib/faketime/libfaketimeMT.so.1"));

	private static final List<Path> GLIBC_MALLOCS = List.of(
			Path.of("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"),
			Path.of("/lib/aarch64-linux-gnu/libc_malloc_debug.so.0"), Path.of("/lib64/libc_malloc_debug.so.0"));

	private final String preload;

	private final Path file;

	private Duration offset = Duration.ZERO;

	private FakeClock(String preload, Path file) {
		this.preload = preload;
		this.file = file;
	}

	/**
	 * Creates a clock at offset zero whose offset file lives in {@code dir}.
	 * @throws IllegalStateException when libfaketime is not installed (see {@link #unavailable()})
	 */
	public static FakeClock create(Path dir) throws IOException {
		Path library = library().orElseThrow(() -> new IllegalStateException(unavailable().orElseThrow()));
		Files.createDirectories(dir);
		String preload = GLIBC_MALLOCS.stream()
			.filter(Files::isReadable)
			.findFirst()
			.map((malloc) -> malloc + " " + library)
			.orElse(library.toString());
		FakeClock clock = new FakeClock(preload, dir.resolve("faketime.rc").toAbsolutePath());
		clock.write();
		return clock;
	}

	/** Why a fake clock cannot be made on this machine, or empty when it can. */
	public static Optional<String> unavailable() {
		if (library().isPresent()) {
			return Optional.empty();
		}
		return Optional.of("libfaketime not found (looked for " + LIBRARIES + "): apt-get install faketime");
	}

	/** The variables to add to a {@link ProcessBuilder}'s environment to run a process on this clock. */
	public Map<String, String> environment() {
		return Map.of("LD_PRELOAD", this.preload, "FAKETIME_TIMESTAMP_FILE", this.file.toString(),
				"FAKETIME_NO_CACHE", "1", "FAKETIME_DONT_FAKE_MONOTONIC", "1", "FAKETIME_FORCE_MONOTONIC_FIX", "0");
	}

	/**
	 * Steps the wall clock of every process on this clock by {@code by} (forward when positive),
	 * on top of earlier jumps; the processes see it on their next clock call.
	 */
	public synchronized void jump(Duration by) throws IOException {
		this.offset = this.offset.plus(by);
		write();
	}

	/** The sum of all jumps so far: how far the processes' wall clock is ahead of the host's. */
	public synchronized Duration offset() {
		return this.offset;
	}

	/** Removes libfaketime's files in {@code /dev/shm} of {@code process} once it has exited. */
	public static void watch(Process process) {
		long pid = process.pid();
		process.onExit().thenRun(() -> {
			try {
				Files.deleteIfExists(Path.of("/dev/shm/faketime_shm_" + pid));
				Files.deleteIfExists(Path.of("/dev/shm/sem.faketime_sem_" + pid));
			}
			catch (IOException ex) {
				// Left behind: only a later process with the same pid would trip over it.
			}
		});
	}

	// libfaketime's relative offset: signed seconds, fractions allowed ("+3600", "-0.25").
	// Written to a temporary file and renamed, so a reader never sees half a line.
	private void write() throws IOException {
		BigDecimal seconds = BigDecimal.valueOf(this.offset.toNanos(), 9).stripTrailingZeros();
		String text = ((seconds.signum() < 0) ? "" : "+") + seconds.toPlainString() + "\n";
		Path temporary = this.file.resolveSibling(this.file.getFileName() + ".tmp");
		Files.writeString(temporary, text, StandardCharsets.US_ASCII);
		Files.move(temporary, this.file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
	}

	private static Optional<Path> library() {
		return LIBRARIES.stream().filter(Files::isReadable).findFirst();
	}

}
