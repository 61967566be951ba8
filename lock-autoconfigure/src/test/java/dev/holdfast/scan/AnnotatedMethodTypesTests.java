package dev.holdfast.scan;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.aopalliance.intercept.MethodInterceptor;
import org.junit.jupiter.api.Test;

import org.springframework.aop.ClassFilter;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.LeaderOnly;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.aop.DistributedLockAdvisor;
import dev.holdfast.aop.LeaderOnlyAdvisor;
import dev.holdfast.aop.LeaderOnlyOperations;
import dev.holdfast.aop.LockOperationSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A class can have a method that the hierarchy search finds an annotation on exactly when its
 * hierarchy declares one; the advisor's class filter passes over the others at once.
 */
class AnnotatedMethodTypesTests {

	private final AnnotatedMethodTypes types = new AnnotatedMethodTypes(DistributedLock.class);

	@Test
	void aClassIsJudgedByTheMethodsItsWholeHierarchyDeclares() {
		assertThat(this.types.hasAnnotatedMethods(Plain.class)).isFalse();
		assertThat(this.types.hasAnnotatedMethods(PlainSubclass.class)).isFalse();
		assertThat(this.types.hasAnnotatedMethods(ArrayList.class)).isFalse();
		assertThat(this.types.hasAnnotatedMethods(Annotated.class)).isTrue();
		assertThat(this.types.hasAnnotatedMethods(AnnotatedSubclass.class)).isTrue();
		assertThat(this.types.hasAnnotatedMethods(ImplementsAnnotatedInterface.class)).isTrue();
		assertThat(this.types.hasAnnotatedMethods(ImplementsSubInterface.class)).isTrue();
		assertThat(this.types.hasAnnotatedMethods(MetaAnnotated.class)).isTrue();
	}

	@Test
	void itAgreesWithTheHierarchySearchOfEachMethod() {
		for (Class<?> type : new Class<?>[] { Plain.class, PlainSubclass.class, Annotated.class,
				AnnotatedSubclass.class, ImplementsAnnotatedInterface.class, ImplementsSubInterface.class,
				MetaAnnotated.class }) {
			// The methods Spring's auto-proxy creator asks the pointcut about: the class's and its interfaces'.
			List<Method> methods = new ArrayList<>(List.of(ReflectionUtils.getAllDeclaredMethods(type)));
			ClassUtils.getAllInterfacesForClassAsSet(type).forEach((ifc) -> methods.addAll(List.of(ifc.getMethods())));
			boolean found = methods.stream()
				.anyMatch((method) -> AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class) != null);
			assertThat(this.types.hasAnnotatedMethods(type)).as(type.getSimpleName()).isEqualTo(found);
		}
	}

	@Test
	void theAdvisorPassesOverClassesWithoutLockedMethods() {
		ClassFilter filter = new DistributedLockAdvisor(new LockOperationSource(null),
				(MethodInterceptor) (invocation) -> invocation.proceed(), 0)
			.getPointcut()
			.getClassFilter();
		assertThat(filter.matches(Plain.class)).isFalse();
		assertThat(filter.matches(Annotated.class)).isTrue();
		assertThat(filter.matches(ImplementsSubInterface.class)).isTrue();
	}

	@Test
	void theLeaderOnlyAdvisorPassesOverClassesWithoutLeaderOnlyMethods() {
		LeaderOnlyOperations operations = new LeaderOnlyOperations((value) -> value, BackendChoice.only("default"));
		ClassFilter filter = new LeaderOnlyAdvisor(operations, (MethodInterceptor) (invocation) -> invocation.proceed(),
				0)
			.getPointcut()
			.getClassFilter();
		assertThat(filter.matches(Plain.class)).isFalse();
		assertThat(filter.matches(Annotated.class)).isFalse();
		assertThat(filter.matches(LeaderOnlyMethod.class)).isTrue();
		assertThat(filter.matches(LeaderOnlyMethodSubclass.class)).isTrue();
	}

	@Test
	void oneLookPerTypeAnswersForEachAnnotationApart() {
		assertThat(this.types.hasAnnotatedMethods(LeaderOnlyMethod.class)).isFalse();
		assertThat(new AnnotatedMethodTypes(LeaderOnly.class).hasAnnotatedMethods(LeaderOnlyMethod.class)).isTrue();
		assertThat(new AnnotatedMethodTypes(SingleInstanceScheduled.class).hasAnnotatedMethods(LeaderOnlyMethod.class))
			.isFalse();
		assertThat(new AnnotatedMethodTypes(LeaderOnly.class).hasAnnotatedMethods(Annotated.class)).isFalse();
		assertThat(new AnnotatedMethodTypes(LeaderOnly.class, DistributedLock.class).hasAnnotatedMethods(Annotated.class))
			.isTrue();
	}

	static class LeaderOnlyMethod {

		@LeaderOnly("group")
		public void work() {
		}

	}

	static class LeaderOnlyMethodSubclass extends LeaderOnlyMethod {

	}

	static class Plain {

		public void work() {
		}

	}

	static class PlainSubclass extends Plain {

	}

	static class Annotated {

		@DistributedLock(key = "'k'")
		public void work() {
		}

	}

	static class AnnotatedSubclass extends Annotated {

		@Override
		public void work() {
		}

	}

	interface AnnotatedInterface {

		@DistributedLock(key = "'k'")
		void work();

	}

	static class ImplementsAnnotatedInterface implements AnnotatedInterface {

		@Override
		public void work() {
		}

	}

	interface SubInterface extends AnnotatedInterface {

	}

	static class ImplementsSubInterface extends Plain implements SubInterface {

	}

	@Target(ElementType.METHOD)
	@Retention(RetentionPolicy.RUNTIME)
	@DistributedLock(key = "'k'")
	@interface Composed {

	}

	static class MetaAnnotated {

		@Composed
		public void work() {
		}

	}

}
