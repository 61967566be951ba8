package dev.holdfast.scan;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import dev.holdfast.LockConfigurationException;

/**
 * What the {@code backend} attribute of Holdfast's annotations chooses (NBK-3 in docs/DESIGN.md):
 * {@code ""} the default backend, else one of {@code holdfast.backends.<name>}. An annotation
 * processor checks the name at startup ({@link #check}) and looks the backend's {@code T} (its
 * {@code LockTemplate}, lock engine, leader elections) up at the call ({@link #get}); adding
 * {@code backend} to an annotation is one call of each.
 * @param <T> what is looked up per backend
 */
public final class BackendChoice<T> {

	/** The default backend's name in an annotation: none. */
	public static final String DEFAULT = "";

	private final Set<String> names;

	private final Function<String, T> lookup;

	/** Looked up once per backend: bounded by the backends configured. */
	private final Map<String, T> resolved = new ConcurrentHashMap<>();

	/**
	 * @param names the named backends ({@code holdfast.backends.<name>})
	 * @param lookup the {@code T} of a backend by name, {@link #DEFAULT} for the default backend;
	 * called at its first {@link #get} (by each thread that asks before the first lookup ends; the
	 * first result is kept)
	 */
	public BackendChoice(Set<String> names, Function<String, T> lookup) {
		this.names = Set.copyOf(names);
		this.lookup = lookup;
	}

	/** A choice of the default backend only, whose {@code T} is {@code only}. */
	public static <T> BackendChoice<T> only(T only) {
		return new BackendChoice<>(Set.of(), (name) -> only);
	}

	/**
	 * Checks that {@code backend} names a configured backend.
	 * @param where the annotated element, for the message ({@code @DistributedLock on Foo.bar})
	 * @throws LockConfigurationException naming the backends there are
	 */
	public void check(String backend, String where) {
		if (!backend.equals(DEFAULT) && !this.names.contains(backend)) {
			throw new LockConfigurationException(where + " names the backend '" + backend + "', which is not "
					+ "configured; the backends are: " + known(),
					"Use backend = \"\" (the default backend) or one of " + new TreeSet<>(this.names)
							+ ", or configure holdfast.backends." + backend + ".type.");
		}
	}

	/** The {@code T} of {@code backend}, checked as {@link #check} does. */
	public T get(String backend) {
		check(backend, "The backend choice");
		T found = this.resolved.get(backend);
		if (found != null) {
			return found;
		}
		// Looked up outside the map's locks: a lookup creating a bean takes Spring's singleton lock,
		// which a thread already holding it may want while calling get for another backend.
		T looked = this.lookup.apply(backend);
		if (looked == null) {
			return looked;
		}
		T raced = this.resolved.putIfAbsent(backend, looked);
		return (raced != null) ? raced : looked;
	}

	/** The named backends ({@code holdfast.backends.<name>}). */
	public Set<String> names() {
		return this.names;
	}

	/** A choice among the same backends of what {@code derive} makes of each one's {@code T}. */
	public <U> BackendChoice<U> map(Function<? super T, U> derive) {
		return new BackendChoice<>(this.names, (name) -> derive.apply(get(name)));
	}

	private String known() {
		Set<String> known = new TreeSet<>(this.names);
		return "\"\" (the default)" + (known.isEmpty() ? "" : ", " + String.join(", ", known));
	}

}
