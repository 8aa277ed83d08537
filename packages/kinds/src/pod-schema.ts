import type { Schema } from '@svc/merge';
import { LABEL_SELECTOR_SCHEMA, OBJECT_META_SCHEMA, localObjectReference, objectSchema } from './object-meta';
import {
  atomicList,
  atomicMergeList,
  bool,
  defaulted,
  described,
  freeForm,
  int32,
  int64,
  intOrString,
  mapList,
  oneOf,
  quantity,
  resourceList,
  str,
  stringMap,
  struct,
  time,
} from './schema-builders';

/**
 * The schema of a Pod: its spec (containers, volumes, scheduling, security)
 * and status, with the merge markers of the upstream types, so strategic
 * merge and server-side apply merge containers by name, ports by number and
 * protocol, and so on. Exported pieces let workload kinds embed a pod template.
 */

// ---- environment -----------------------------------------------------------

const KEY_SELECTOR = (what: string): Schema =>
  struct(
    {
      name: str(`Name of the ${what} in the pod's namespace.`),
      key: str(`Key of the ${what} to select.`),
      optional: bool(`Whether the ${what} or its key may be missing.`),
    },
    { required: ['key'], atomic: true, description: `Selects one key of a ${what}.` },
  );

const OBJECT_FIELD_SELECTOR = struct(
  {
    apiVersion: str('Version of the schema the field path is written in; defaults to v1.'),
    fieldPath: str('Path of the field to select, such as `metadata.name` or `status.podIP`.'),
  },
  { required: ['fieldPath'], atomic: true, description: 'Selects a field of the pod.' },
);

const RESOURCE_FIELD_SELECTOR = struct(
  {
    containerName: str('Container whose resources are read; required for volumes.'),
    resource: str('Resource to select, such as `limits.cpu`.'),
    divisor: quantity('Unit the value is expressed in; defaults to 1.'),
  },
  { required: ['resource'], atomic: true, description: 'Selects a resource request or limit of a container.' },
);

export const ENV_VAR_SCHEMA = struct(
  {
    name: str('Name of the environment variable.'),
    value: str('Value; `$(VAR)` references to earlier variables are expanded. Defaults to the empty string.'),
    valueFrom: struct(
      {
        fieldRef: OBJECT_FIELD_SELECTOR,
        resourceFieldRef: RESOURCE_FIELD_SELECTOR,
        configMapKeyRef: KEY_SELECTOR('ConfigMap'),
        secretKeyRef: KEY_SELECTOR('Secret'),
      },
      { description: 'Source of the value; cannot be used with a non-empty value.' },
    ),
  },
  { required: ['name'], description: 'An environment variable of a container.' },
);

const ENV_FROM_SOURCE = struct(
  {
    prefix: str('Prefix prepended to every key.'),
    configMapRef: struct({ name: str('Name of the ConfigMap.'), optional: bool('Whether the ConfigMap may be missing.') }, { atomic: true }),
    secretRef: struct({ name: str('Name of the Secret.'), optional: bool('Whether the Secret may be missing.') }, { atomic: true }),
  },
  { description: 'A source of a set of environment variables.' },
);

// ---- probes and lifecycle --------------------------------------------------

const EXEC_ACTION = struct({ command: atomicList(str(), 'Command line to run inside the container; not run in a shell.') }, { description: 'Runs a command.' });

const HTTP_GET_ACTION = struct(
  {
    path: str('Path to request.'),
    port: intOrString('Port number or name to connect to.'),
    host: str('Host to connect to; defaults to the pod IP.'),
    scheme: oneOf(['HTTP', 'HTTPS'], 'Scheme to connect with; defaults to HTTP.'),
    httpHeaders: atomicList(
      struct({ name: str('Header name.'), value: str('Header value.') }, { required: ['name', 'value'] }),
      'Extra headers to send.',
    ),
  },
  { required: ['port'], description: 'Performs an HTTP GET request.' },
);

const TCP_SOCKET_ACTION = struct(
  { port: intOrString('Port number or name to connect to.'), host: str('Host to connect to; defaults to the pod IP.') },
  { required: ['port'], description: 'Opens a TCP connection.' },
);

const GRPC_ACTION = struct(
  { port: int32('Port of the gRPC service.'), service: defaulted(str('Service name for the gRPC health check.'), '') },
  { required: ['port'], description: 'Calls the gRPC health checking protocol.' },
);

export const PROBE_SCHEMA = struct(
  {
    exec: EXEC_ACTION,
    httpGet: HTTP_GET_ACTION,
    tcpSocket: TCP_SOCKET_ACTION,
    grpc: GRPC_ACTION,
    initialDelaySeconds: int32('Seconds after the container started before the first probe.'),
    timeoutSeconds: int32('Seconds after which a probe times out; defaults to 1.'),
    periodSeconds: int32('Seconds between probes; defaults to 10.'),
    successThreshold: int32('Consecutive successes after a failure for the probe to count as passing; defaults to 1.'),
    failureThreshold: int32('Consecutive failures for the probe to count as failed; defaults to 3.'),
    terminationGracePeriodSeconds: int64('Grace period used when a failing probe stops the container.'),
  },
  { description: 'A health check run against a container.' },
);

const LIFECYCLE_HANDLER = struct(
  {
    exec: EXEC_ACTION,
    httpGet: HTTP_GET_ACTION,
    tcpSocket: TCP_SOCKET_ACTION,
    sleep: struct({ seconds: int64('Seconds to sleep.') }, { required: ['seconds'], description: 'Sleeps for a while.' }),
  },
  { description: 'An action run at a point of the container lifecycle.' },
);

const LIFECYCLE = struct(
  {
    postStart: described(LIFECYCLE_HANDLER, 'Called right after the container was created.'),
    preStop: described(LIFECYCLE_HANDLER, 'Called before the container is stopped.'),
    stopSignal: str('Signal sent to stop the container.'),
  },
  { description: 'Actions the system runs in response to container lifecycle events.' },
);

// ---- security --------------------------------------------------------------

const SE_LINUX_OPTIONS = struct(
  { user: str('SELinux user label.'), role: str('SELinux role label.'), type: str('SELinux type label.'), level: str('SELinux level label.') },
  { description: 'SELinux labels applied to the container.' },
);

const WINDOWS_OPTIONS = struct(
  {
    gmsaCredentialSpecName: str('Name of the GMSA credential spec to use.'),
    gmsaCredentialSpec: str('Contents of the GMSA credential spec.'),
    runAsUserName: str('User name to run the entrypoint as.'),
    hostProcess: bool('Whether the container runs as a host process.'),
  },
  { description: 'Windows-specific options.' },
);

const SECCOMP_PROFILE = struct(
  {
    type: oneOf(['Localhost', 'RuntimeDefault', 'Unconfined'], 'Kind of seccomp profile.'),
    localhostProfile: str('Profile file on the node, for type Localhost.'),
  },
  { required: ['type'], description: 'Seccomp profile to apply.' },
);

const APP_ARMOR_PROFILE = struct(
  {
    type: oneOf(['Localhost', 'RuntimeDefault', 'Unconfined'], 'Kind of AppArmor profile.'),
    localhostProfile: str('Profile loaded on the node, for type Localhost.'),
  },
  { required: ['type'], description: 'AppArmor profile to apply.' },
);

export const SECURITY_CONTEXT_SCHEMA = struct(
  {
    capabilities: struct(
      { add: atomicList(str(), 'Capabilities to add.'), drop: atomicList(str(), 'Capabilities to drop.') },
      { description: 'POSIX capabilities to add or drop.' },
    ),
    privileged: bool('Run the container privileged, equivalent to root on the host.'),
    seLinuxOptions: SE_LINUX_OPTIONS,
    windowsOptions: WINDOWS_OPTIONS,
    runAsUser: int64('UID to run the entrypoint as.'),
    runAsGroup: int64('GID to run the entrypoint as.'),
    runAsNonRoot: bool('Require the container to run as a non-root user.'),
    readOnlyRootFilesystem: bool('Mount the root filesystem read-only.'),
    allowPrivilegeEscalation: bool('Whether a process may gain more privileges than its parent.'),
    procMount: str('Type of proc mount: Default or Unmasked.'),
    seccompProfile: SECCOMP_PROFILE,
    appArmorProfile: APP_ARMOR_PROFILE,
  },
  { description: 'Security options of a container; fields set here win over the pod security context.' },
);

export const POD_SECURITY_CONTEXT_SCHEMA = struct(
  {
    seLinuxOptions: SE_LINUX_OPTIONS,
    windowsOptions: WINDOWS_OPTIONS,
    runAsUser: int64('UID to run container entrypoints as.'),
    runAsGroup: int64('GID to run container entrypoints as.'),
    runAsNonRoot: bool('Require containers to run as a non-root user.'),
    supplementalGroups: atomicList(int64(), 'Groups added to the first process of each container.'),
    supplementalGroupsPolicy: str('How supplemental groups are computed: Merge or Strict.'),
    fsGroup: int64('Group that owns supported volumes and is added to every container.'),
    sysctls: atomicList(
      struct({ name: str('Name of the sysctl.'), value: str('Value to set.') }, { required: ['name', 'value'] }),
      'Namespaced sysctls set for the pod.',
    ),
    fsGroupChangePolicy: str('When volume ownership is changed: OnRootMismatch or Always.'),
    seccompProfile: SECCOMP_PROFILE,
    appArmorProfile: APP_ARMOR_PROFILE,
    seLinuxChangePolicy: str('How the SELinux label is applied to volumes: Recursive or MountOption.'),
  },
  { description: 'Security options applied to every container of the pod.' },
);

// ---- containers ------------------------------------------------------------

export const CONTAINER_PORT_SCHEMA = struct(
  {
    name: str('IANA service name of the port, unique within the pod; services can refer to it.'),
    hostPort: int32('Port to expose on the host; rarely needed.'),
    containerPort: int32('Port number to expose on the pod IP, 1–65535.'),
    protocol: defaulted(oneOf(['TCP', 'UDP', 'SCTP'], 'Protocol of the port; defaults to TCP.'), 'TCP'),
    hostIP: str('Host IP to bind the host port to.'),
  },
  { required: ['containerPort'], description: 'A network port of a container.' },
);

const VOLUME_MOUNT = struct(
  {
    name: str('Name of the volume.'),
    readOnly: bool('Mount read-only.'),
    recursiveReadOnly: str('Whether a read-only mount is read-only recursively: Disabled, IfPossible or Enabled.'),
    mountPath: str('Path in the container where the volume is mounted; may not contain `:`.'),
    subPath: str('Path within the volume to mount instead of its root.'),
    mountPropagation: str('How mounts propagate between host and container: None, HostToContainer or Bidirectional.'),
    subPathExpr: str('Like subPath, with `$(VAR)` references expanded from the container environment.'),
  },
  { required: ['name', 'mountPath'], description: 'A mount of a volume into a container.' },
);

const VOLUME_DEVICE = struct(
  { name: str('Name of the persistent volume claim in the pod.'), devicePath: str('Path in the container the device is mapped to.') },
  { required: ['name', 'devicePath'], description: 'A raw block device mapped into a container.' },
);

export const RESOURCE_REQUIREMENTS_SCHEMA = struct(
  {
    limits: resourceList('Largest amount of each resource the container may use.'),
    requests: resourceList('Amount of each resource the container asks for; defaults to the limits.'),
    claims: mapList(
      struct({ name: str('Name of a resource claim of the pod.'), request: str('Name of one request within the claim.') }, { required: ['name'] }),
      ['name'],
      { description: 'Dynamically allocated resources the container uses.' },
    ),
  },
  { description: 'Compute resources the container needs.' },
);

const RESIZE_POLICY = struct(
  {
    resourceName: str('Resource the policy applies to: cpu or memory.'),
    restartPolicy: str('What happens when the resource is resized: NotRequired or RestartContainer.'),
  },
  { required: ['resourceName', 'restartPolicy'], description: 'How a container reacts when one of its resources is resized.' },
);

function containerProperties(): Record<string, Schema> {
  return {
    name: str('Name of the container, a DNS label unique within the pod. Cannot be updated.'),
    image: str('Container image name.'),
    command: atomicList(str(), 'Entrypoint array; replaces the image ENTRYPOINT. Not run in a shell.'),
    args: atomicList(str(), 'Arguments to the entrypoint; replace the image CMD.'),
    workingDir: str('Working directory; defaults to the image default.'),
    ports: mapList(CONTAINER_PORT_SCHEMA, ['containerPort', 'protocol'], {
      mergeKey: 'containerPort',
      description: 'Ports to expose from the container; informational, but services may refer to named ports.',
    }),
    envFrom: atomicList(ENV_FROM_SOURCE, 'Sources of whole sets of environment variables; `env` wins on duplicates.'),
    env: mapList(ENV_VAR_SCHEMA, ['name'], { mergeKey: 'name', description: 'Environment variables to set in the container.' }),
    resources: RESOURCE_REQUIREMENTS_SCHEMA,
    resizePolicy: atomicList(RESIZE_POLICY, 'How each resource is resized.'),
    restartPolicy: str('Restart policy of an init container; `Always` makes it a sidecar.'),
    volumeMounts: mapList(VOLUME_MOUNT, ['mountPath'], { mergeKey: 'mountPath', description: 'Volumes mounted into the filesystem of the container.' }),
    volumeDevices: mapList(VOLUME_DEVICE, ['devicePath'], { mergeKey: 'devicePath', description: 'Block devices the container uses.' }),
    livenessProbe: described(PROBE_SCHEMA, 'Periodic check of container liveness; the container is restarted when it fails.'),
    readinessProbe: described(PROBE_SCHEMA, 'Periodic check of readiness to serve; the pod is removed from service endpoints when it fails.'),
    startupProbe: described(PROBE_SCHEMA, 'Check that the container has started; other probes wait until it succeeds.'),
    lifecycle: LIFECYCLE,
    terminationMessagePath: str('File in the container the termination message is read from; defaults to /dev/termination-log.'),
    terminationMessagePolicy: oneOf(['File', 'FallbackToLogsOnError'], 'Where the termination message comes from; defaults to File.'),
    imagePullPolicy: oneOf(['Always', 'Never', 'IfNotPresent'], 'When to pull the image; Always for `:latest` or no tag, IfNotPresent otherwise.'),
    securityContext: SECURITY_CONTEXT_SCHEMA,
    stdin: bool('Allocate a buffer for stdin.'),
    stdinOnce: bool('Close stdin after the first attach ends.'),
    tty: bool('Allocate a TTY; needs stdin.'),
  };
}

export const CONTAINER_SCHEMA = struct(containerProperties(), { required: ['name'], description: 'A container to run in the pod.' });

const EPHEMERAL_CONTAINER_SCHEMA = struct(
  { ...containerProperties(), targetContainerName: str('Container whose namespaces this one joins.') },
  { required: ['name'], description: 'A temporary container added to a running pod for troubleshooting.' },
);

// ---- volumes ---------------------------------------------------------------

const KEY_TO_PATH = struct(
  {
    key: str('Key to project.'),
    path: str('Relative path of the file to map the key to.'),
    mode: int32('Mode bits of the file, 0000–0777.'),
  },
  { required: ['key', 'path'], description: 'Maps a data key to a file path.' },
);

const DOWNWARD_API_FILE = struct(
  {
    path: str('Relative path of the file to create.'),
    fieldRef: OBJECT_FIELD_SELECTOR,
    resourceFieldRef: RESOURCE_FIELD_SELECTOR,
    mode: int32('Mode bits of the file, 0000–0777.'),
  },
  { required: ['path'], description: 'A file with information about the pod.' },
);

const SECRET_PROJECTION = struct(
  { name: str('Name of the Secret.'), items: atomicList(KEY_TO_PATH, 'Keys to project; all when unset.'), optional: bool('Whether the Secret may be missing.') },
  { description: 'Secret data projected into the volume.' },
);

const CONFIG_MAP_PROJECTION = struct(
  { name: str('Name of the ConfigMap.'), items: atomicList(KEY_TO_PATH, 'Keys to project; all when unset.'), optional: bool('Whether the ConfigMap may be missing.') },
  { description: 'ConfigMap data projected into the volume.' },
);

const VOLUME_SOURCES: Record<string, Schema> = {
  hostPath: struct(
    { path: str('Path on the host.'), type: str('Expected type of the path, such as Directory or File.') },
    { required: ['path'], description: 'A file or directory of the host node.' },
  ),
  emptyDir: struct(
    { medium: str('Storage medium: empty for the node default, or Memory.'), sizeLimit: quantity('Largest size of the volume.') },
    { description: 'A temporary directory that lives as long as the pod.' },
  ),
  secret: struct(
    {
      secretName: str('Name of the Secret in the pod namespace.'),
      items: atomicList(KEY_TO_PATH, 'Keys to project; all when unset.'),
      defaultMode: int32('Mode bits of the files; defaults to 0644.'),
      optional: bool('Whether the Secret may be missing.'),
    },
    { description: 'The data of a Secret as files.' },
  ),
  configMap: struct(
    {
      name: str('Name of the ConfigMap.'),
      items: atomicList(KEY_TO_PATH, 'Keys to project; all when unset.'),
      defaultMode: int32('Mode bits of the files; defaults to 0644.'),
      optional: bool('Whether the ConfigMap may be missing.'),
    },
    { description: 'The data of a ConfigMap as files.' },
  ),
  persistentVolumeClaim: struct(
    { claimName: str('Name of the claim in the pod namespace.'), readOnly: bool('Mount read-only.') },
    { required: ['claimName'], description: 'A persistent volume claimed in the same namespace.' },
  ),
  downwardAPI: struct(
    { items: atomicList(DOWNWARD_API_FILE, 'Files to create.'), defaultMode: int32('Mode bits of the files; defaults to 0644.') },
    { description: 'Information about the pod as files.' },
  ),
  projected: struct(
    {
      sources: atomicList(
        struct({
          secret: SECRET_PROJECTION,
          configMap: CONFIG_MAP_PROJECTION,
          downwardAPI: struct({ items: atomicList(DOWNWARD_API_FILE, 'Files to create.') }),
          serviceAccountToken: struct(
            {
              audience: str('Audience the token is for; defaults to the API server.'),
              expirationSeconds: int64('Requested lifetime of the token; defaults to one hour.'),
              path: str('Relative path of the token file.'),
            },
            { required: ['path'] },
          ),
          clusterTrustBundle: struct({
            name: str('Name of a ClusterTrustBundle.'),
            signerName: str('Signer whose bundles are selected.'),
            labelSelector: LABEL_SELECTOR_SCHEMA,
            optional: bool('Whether a missing bundle is tolerated.'),
            path: str('Relative path of the file.'),
          }),
        }),
        'Sources combined into the volume.',
      ),
      defaultMode: int32('Mode bits of the files; defaults to 0644.'),
    },
    { description: 'Several sources combined into one directory.' },
  ),
  nfs: struct(
    { server: str('Host name or IP of the NFS server.'), path: str('Path exported by the server.'), readOnly: bool('Mount read-only.') },
    { required: ['server', 'path'], description: 'An NFS mount.' },
  ),
  csi: struct(
    {
      driver: str('Name of the CSI driver.'),
      readOnly: bool('Mount read-only.'),
      fsType: str('Filesystem type to mount.'),
      volumeAttributes: stringMap('Driver-specific properties.'),
      nodePublishSecretRef: localObjectReference('Secret with sensitive information for the driver.'),
    },
    { required: ['driver'], description: 'An ephemeral volume provided by a CSI driver.' },
  ),
  ephemeral: struct(
    {
      volumeClaimTemplate: struct(
        { metadata: OBJECT_META_SCHEMA, spec: freeForm('Spec of the claim created for the pod.') },
        { required: ['spec'], description: 'Template of the claim created with the pod and deleted with it.' },
      ),
    },
    { description: 'A volume claimed for the pod alone.' },
  ),
  image: struct(
    { reference: str('Image or artifact reference to mount.'), pullPolicy: oneOf(['Always', 'Never', 'IfNotPresent'], 'When to pull.') },
    { description: 'An OCI image or artifact mounted read-only.' },
  ),
  iscsi: freeForm('An iSCSI disk.'),
  fc: freeForm('A Fibre Channel disk.'),
  rbd: freeForm('A Rados block device.'),
  cephfs: freeForm('A CephFS mount.'),
  azureFile: freeForm('An Azure File share.'),
  azureDisk: freeForm('An Azure data disk.'),
  gcePersistentDisk: freeForm('A GCE persistent disk.'),
  awsElasticBlockStore: freeForm('An AWS EBS disk.'),
  gitRepo: freeForm('Deprecated: a directory cloned from a git repository.'),
};

export const VOLUME_SCHEMA = struct(
  { name: str('Name of the volume, a DNS label unique within the pod.'), ...VOLUME_SOURCES },
  { required: ['name'], description: 'A named volume the containers of the pod can mount; exactly one source is set.' },
);

// ---- scheduling ------------------------------------------------------------

const NODE_SELECTOR_REQUIREMENT = struct(
  {
    key: str('Label or field key.'),
    operator: oneOf(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'], 'Relation of the key to the values.'),
    values: atomicList(str(), 'Values to compare with.'),
  },
  { required: ['key', 'operator'] },
);

const NODE_SELECTOR_TERM = struct(
  {
    matchExpressions: atomicList(NODE_SELECTOR_REQUIREMENT, 'Requirements on node labels.'),
    matchFields: atomicList(NODE_SELECTOR_REQUIREMENT, 'Requirements on node fields.'),
  },
  { atomic: true, description: 'Requirements that must all hold; an empty term matches nothing.' },
);

const POD_AFFINITY_TERM = struct(
  {
    labelSelector: LABEL_SELECTOR_SCHEMA,
    namespaces: atomicList(str(), 'Namespaces the selector applies to; the pod namespace when empty.'),
    topologyKey: str('Node label whose value defines co-location.'),
    namespaceSelector: LABEL_SELECTOR_SCHEMA,
    matchLabelKeys: atomicList(str(), 'Pod label keys whose values are added to the selector.'),
    mismatchLabelKeys: atomicList(str(), 'Pod label keys whose values are excluded by the selector.'),
  },
  { required: ['topologyKey'], description: 'Pods this pod should (or should not) be co-located with.' },
);

const WEIGHTED_POD_AFFINITY_TERM = struct(
  { weight: int32('Weight, 1–100.'), podAffinityTerm: POD_AFFINITY_TERM },
  { required: ['weight', 'podAffinityTerm'] },
);

function podAffinity(description: string): Schema {
  return struct(
    {
      requiredDuringSchedulingIgnoredDuringExecution: atomicList(POD_AFFINITY_TERM, 'Terms that must be met at scheduling time.'),
      preferredDuringSchedulingIgnoredDuringExecution: atomicList(WEIGHTED_POD_AFFINITY_TERM, 'Terms the scheduler prefers, by weight.'),
    },
    { description },
  );
}

export const AFFINITY_SCHEMA = struct(
  {
    nodeAffinity: struct(
      {
        requiredDuringSchedulingIgnoredDuringExecution: struct(
          { nodeSelectorTerms: atomicList(NODE_SELECTOR_TERM, 'Terms of which at least one must match.') },
          { required: ['nodeSelectorTerms'], atomic: true, description: 'Node requirements that must be met at scheduling time.' },
        ),
        preferredDuringSchedulingIgnoredDuringExecution: atomicList(
          struct({ weight: int32('Weight, 1–100.'), preference: NODE_SELECTOR_TERM }, { required: ['weight', 'preference'] }),
          'Node preferences of the scheduler, by weight.',
        ),
      },
      { description: 'Node affinity scheduling rules.' },
    ),
    podAffinity: podAffinity('Rules for placing the pod near other pods.'),
    podAntiAffinity: podAffinity('Rules for keeping the pod away from other pods.'),
  },
  { description: 'Scheduling constraints of the pod.' },
);

export const TOLERATION_SCHEMA = struct(
  {
    key: str('Taint key the toleration applies to; empty matches all keys with operator Exists.'),
    operator: oneOf(['Exists', 'Equal'], 'Relation of key and value; defaults to Equal.'),
    value: str('Taint value to match.'),
    effect: str('Taint effect to match: NoSchedule, PreferNoSchedule or NoExecute; empty matches all.'),
    tolerationSeconds: int64('How long a NoExecute taint is tolerated before eviction.'),
  },
  { description: 'Allows scheduling onto nodes with a matching taint.' },
);

const TOPOLOGY_SPREAD_CONSTRAINT = struct(
  {
    maxSkew: int32('Largest allowed difference of matching pods between topology domains.'),
    topologyKey: str('Node label whose values define the domains.'),
    whenUnsatisfiable: oneOf(['DoNotSchedule', 'ScheduleAnyway'], 'What to do when the constraint cannot be met.'),
    labelSelector: LABEL_SELECTOR_SCHEMA,
    minDomains: int32('Smallest number of eligible domains.'),
    nodeAffinityPolicy: str('Whether node affinity is honoured when computing skew: Honor or Ignore.'),
    nodeTaintsPolicy: str('Whether node taints are honoured when computing skew: Honor or Ignore.'),
    matchLabelKeys: atomicList(str(), 'Pod label keys whose values are added to the selector.'),
  },
  { required: ['maxSkew', 'topologyKey', 'whenUnsatisfiable'], description: 'How pods are spread across a topology.' },
);

// ---- the pod spec ----------------------------------------------------------

export const POD_SPEC_SCHEMA = struct(
  {
    volumes: mapList(VOLUME_SCHEMA, ['name'], {
      mergeKey: 'name',
      patchStrategy: 'merge,retainKeys',
      description: 'Volumes the containers of the pod can mount.',
    }),
    initContainers: mapList(CONTAINER_SCHEMA, ['name'], {
      mergeKey: 'name',
      description: 'Containers run in order before the app containers start; each must succeed.',
    }),
    containers: mapList(CONTAINER_SCHEMA, ['name'], {
      mergeKey: 'name',
      description: 'Containers of the pod; at least one. Cannot be added or removed after creation.',
    }),
    ephemeralContainers: mapList(EPHEMERAL_CONTAINER_SCHEMA, ['name'], {
      mergeKey: 'name',
      description: 'Temporary debugging containers, added through the ephemeralcontainers subresource.',
    }),
    restartPolicy: oneOf(['Always', 'OnFailure', 'Never'], 'Restart policy of the containers; defaults to Always.'),
    terminationGracePeriodSeconds: int64('Seconds the pod has to stop gracefully; defaults to 30.'),
    activeDeadlineSeconds: int64('Seconds the pod may be active before the system stops it.'),
    dnsPolicy: oneOf(['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'], 'DNS policy of the pod; defaults to ClusterFirst.'),
    nodeSelector: stringMap('Labels a node must have for the pod to run there.', true),
    serviceAccountName: str('Service account the pod runs as.'),
    serviceAccount: str('Deprecated alias of serviceAccountName.'),
    automountServiceAccountToken: bool('Whether an API token is mounted into the pod.'),
    nodeName: str('Node the pod is bound to; set by the scheduler.'),
    hostNetwork: bool('Use the host network namespace.'),
    hostPID: bool('Use the host PID namespace.'),
    hostIPC: bool('Use the host IPC namespace.'),
    shareProcessNamespace: bool('Share one process namespace between the containers.'),
    securityContext: POD_SECURITY_CONTEXT_SCHEMA,
    imagePullSecrets: mapList(localObjectReference(), ['name'], {
      mergeKey: 'name',
      description: 'Secrets used to pull the images of the pod.',
    }),
    hostname: str('Host name of the pod; defaults to the pod name.'),
    subdomain: str('Subdomain of the pod, making its FQDN `<hostname>.<subdomain>.<namespace>.svc.<cluster domain>`.'),
    affinity: AFFINITY_SCHEMA,
    schedulerName: str('Scheduler that places the pod.'),
    tolerations: atomicList(TOLERATION_SCHEMA, 'Taints the pod tolerates.'),
    hostAliases: mapList(
      struct({ ip: str('IP address of the entries.'), hostnames: atomicList(str(), 'Host names for the IP.') }, { required: ['ip'] }),
      ['ip'],
      { mergeKey: 'ip', description: 'Extra entries for the hosts file of the pod.' },
    ),
    priorityClassName: str('Priority class of the pod.'),
    priority: int32('Priority value, filled from the priority class.'),
    dnsConfig: struct(
      {
        nameservers: atomicList(str(), 'Name server IPs.'),
        searches: atomicList(str(), 'DNS search domains.'),
        options: atomicList(struct({ name: str('Option name.'), value: str('Option value.') }), 'Resolver options.'),
      },
      { description: 'DNS parameters merged with those from dnsPolicy.' },
    ),
    readinessGates: atomicList(
      struct({ conditionType: str('Pod condition type that must be True.') }, { required: ['conditionType'] }),
      'Extra conditions for pod readiness.',
    ),
    runtimeClassName: str('RuntimeClass used to run the pod.'),
    enableServiceLinks: bool('Inject environment variables for services; defaults to true.'),
    preemptionPolicy: oneOf(['Never', 'PreemptLowerPriority'], 'Whether the pod may preempt lower-priority pods.'),
    overhead: resourceList('Resources consumed by the pod sandbox itself.'),
    topologySpreadConstraints: mapList(TOPOLOGY_SPREAD_CONSTRAINT, ['topologyKey', 'whenUnsatisfiable'], {
      mergeKey: 'topologyKey',
      description: 'How pods are spread across topology domains.',
    }),
    setHostnameAsFQDN: bool('Use the fully qualified domain name as host name.'),
    os: struct({ name: oneOf(['linux', 'windows'], 'Operating system.') }, { required: ['name'], description: 'Operating system of the containers.' }),
    hostUsers: bool('Use the host user namespace; defaults to true.'),
    schedulingGates: mapList(struct({ name: str('Name of the gate.') }, { required: ['name'] }), ['name'], {
      mergeKey: 'name',
      description: 'Gates that keep the pod from being scheduled while present.',
    }),
    resourceClaims: mapList(
      struct(
        {
          name: str('Name of the claim within the pod.'),
          resourceClaimName: str('Name of an existing ResourceClaim.'),
          resourceClaimTemplateName: str('Name of a template a claim is created from.'),
        },
        { required: ['name'] },
      ),
      ['name'],
      { mergeKey: 'name', patchStrategy: 'merge,retainKeys', description: 'Dynamically allocated resources the pod needs.' },
    ),
    resources: RESOURCE_REQUIREMENTS_SCHEMA,
  },
  { required: ['containers'], description: 'Desired state of a pod.' },
);

// ---- status ----------------------------------------------------------------

const CONTAINER_STATE = struct(
  {
    waiting: struct({ reason: str('Why the container is not running yet.'), message: str('Details.') }),
    running: struct({ startedAt: time('When the container last started.') }),
    terminated: struct(
      {
        exitCode: int32('Exit status of the last run.'),
        signal: int32('Signal that ended the last run.'),
        reason: str('Why the container stopped.'),
        message: str('Details.'),
        startedAt: time('When the last run started.'),
        finishedAt: time('When the last run ended.'),
        containerID: str('Container ID of the last run.'),
      },
      { required: ['exitCode'] },
    ),
  },
  { description: 'State of a container; at most one member is set.' },
);

export const CONTAINER_STATUS_SCHEMA = struct(
  {
    name: str('Name of the container.'),
    state: CONTAINER_STATE,
    lastState: described(CONTAINER_STATE, 'State of the previous run.'),
    ready: bool('Whether the container passes its readiness probe.'),
    restartCount: int32('Number of restarts.'),
    image: str('Image the container runs.'),
    imageID: str('ID of the image.'),
    containerID: str('ID of the container in the runtime.'),
    started: bool('Whether the container passed its startup probe.'),
    allocatedResources: resourceList('Resources allocated to the container.'),
    resources: RESOURCE_REQUIREMENTS_SCHEMA,
    volumeMounts: mapList(
      struct(
        {
          name: str('Name of the volume.'),
          mountPath: str('Path of the mount.'),
          readOnly: bool('Whether it is read-only.'),
          recursiveReadOnly: str('Recursive read-only state.'),
        },
        { required: ['name', 'mountPath'] },
      ),
      ['mountPath'],
      { mergeKey: 'mountPath', description: 'Mounts as seen by the runtime.' },
    ),
    user: freeForm('Identity the first process runs as.'),
    allocatedResourcesStatus: mapList(
      struct({ name: str('Resource name.'), resources: atomicList(struct({ resourceID: str(), health: str() })) }, { required: ['name'] }),
      ['name'],
      { mergeKey: 'name', description: 'Health of allocated resources.' },
    ),
    stopSignal: str('Signal that will stop the container.'),
  },
  { required: ['name', 'ready', 'restartCount', 'image', 'imageID'], description: 'Observed state of one container.' },
);

const POD_IP = struct({ ip: str('An IP address.') }, { required: ['ip'] });

export const POD_STATUS_SCHEMA = struct(
  {
    observedGeneration: int64('The metadata.generation this status was computed from.'),
    phase: oneOf(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'], 'Lifecycle phase of the pod.'),
    conditions: mapList(
      struct(
        {
          type: str('Type of the condition, such as Ready or PodScheduled.'),
          observedGeneration: int64('The metadata.generation the condition was computed from.'),
          status: str('True, False or Unknown.'),
          lastProbeTime: time('When the condition was last probed.'),
          lastTransitionTime: time('When the status last changed.'),
          reason: str('Programmatic reason for the last transition.'),
          message: str('Human-readable details.'),
        },
        { required: ['type', 'status'] },
      ),
      ['type'],
      { mergeKey: 'type', description: 'Current service state of the pod.' },
    ),
    message: str('Human-readable reason for the current state.'),
    reason: str('Programmatic reason for the current state, such as Evicted.'),
    nominatedNodeName: str('Node the pod may run on once preemption completes.'),
    hostIP: str('IP of the node the pod runs on.'),
    hostIPs: atomicMergeList(POD_IP, 'ip', 'IPs of the node the pod runs on.'),
    podIP: str('Primary IP of the pod.'),
    podIPs: mapList(POD_IP, ['ip'], { mergeKey: 'ip', description: 'IPs of the pod, at most one per family.' }),
    startTime: time('When the node accepted the pod.'),
    initContainerStatuses: atomicList(CONTAINER_STATUS_SCHEMA, 'Status of each init container.'),
    containerStatuses: atomicList(CONTAINER_STATUS_SCHEMA, 'Status of each container.'),
    qosClass: oneOf(['Guaranteed', 'Burstable', 'BestEffort'], 'Quality of service class of the pod.'),
    ephemeralContainerStatuses: atomicList(CONTAINER_STATUS_SCHEMA, 'Status of each ephemeral container.'),
    resize: str('Status of a requested resize.'),
    resourceClaimStatuses: mapList(
      struct({ name: str('Name of the claim in the pod.'), resourceClaimName: str('Name of the ResourceClaim.') }, { required: ['name'] }),
      ['name'],
      { mergeKey: 'name', patchStrategy: 'merge,retainKeys', description: 'Names of the ResourceClaims created for the pod.' },
    ),
  },
  { description: 'Observed state of a pod. Written through the status subresource.' },
);

export const POD_TEMPLATE_SPEC_SCHEMA = struct(
  { metadata: OBJECT_META_SCHEMA, spec: POD_SPEC_SCHEMA },
  { description: 'Metadata and spec of pods created from a template.' },
);

export const POD_SCHEMA = objectSchema('Pod is a group of containers that run together on one node.', {
  spec: POD_SPEC_SCHEMA,
  status: POD_STATUS_SCHEMA,
});
